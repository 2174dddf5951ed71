"""Issue 28's CLI habits (and issue 30's detection output) through the real hone binary against a
real hone-controller, with a fake worker reporting epochs:

1. names wherever ids are: `dataset get NAME`, `experiment get NAME`, `job status NAME`, `train
   start --experiment NAME`, `experiment create --train-dataset NAME`; a name two datasets share
   is an error (exit 2) listing both ids; an id still works;
2. errors under --json: one JSON object on stderr with the controller's message and field, exit 1
   (a canceled or failed job's too, from `job wait`); a failed job's error and last lines in `job status`, line by
   line;
3. did you mean: a spec key (train.lrr -> train.lr) from the controller; the controller's algorithm
   list names the five algorithms once, with no stray "b h", and suggests the near one;
4. `job status` of an AutoML job is a short summary (no field printed twice), its trials behind
   `job trials`; --json is the whole job;
5. `job metrics --csv` is every epoch of every trial, the values the controller's own CSV has;
6. a job whose experiment's metric is val_map: `job wait`'s progress line and `job status` show
   val_map, `job metrics` has a VAL MAP column;
7. `job evaluate` shows the evaluate job's own progress, no training line (epoch 0/0);
8. `job curves` draws trials stopped after one epoch (a circle where a one-point line draws none);
9. bash completion offers the controller's ids and names, option values and spec keys, and
   nothing (quickly) when the controller is not there.

usage: test_cli_habits.py HONE HONE-CONTROLLER"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
from hone_test import Controller, FakeWorker, tempdir, write_idx  # noqa: E402
from test_automl import drive  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pngfolder import write_kitti  # noqa: E402

HONE = None


def hone(url, *args, stdin=None):
    p = subprocess.run([HONE, "--url", url] + list(args), capture_output=True, text=True,
                       timeout=120, input=stdin)
    return p.returncode, p.stdout, p.stderr


def ok(url, *args):
    rc, so, se = hone(url, *args)
    assert rc == 0, ("hone", args, rc, so, se)
    return so


def fake_model(job):
    """What a trainer leaves in its job folder: enough for an evaluate job to be accepted."""
    for name, text in (("model.bin", "weights"), ("model.json", "{}"), ("spec.yaml", "x: 1\n")):
        with open(os.path.join(job["out_dir"], name), "w") as f:
            f.write(text)


def complete(url, *words):
    """COMPREPLY of the generated bash completion for `hone --url URL WORDS...` (last word: the
    one being completed)."""
    script = subprocess.run([HONE, "completion", "bash"], capture_output=True, text=True,
                            check=True).stdout
    words = ["hone", "--url", url] + list(words)
    prog = (script + "\nCOMP_WORDS=(" + " ".join("'%s'" % w for w in words) + ")\n"
            "COMP_CWORD=%d\nCOMPREPLY=()\n_hone\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n"
            % (len(words) - 1))
    env = dict(os.environ, PATH=os.path.dirname(HONE) + ":" + os.environ.get("PATH", ""))
    p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def main():
    global HONE
    HONE, ctl_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    d = tempdir()
    root = os.path.join(d, "ds")
    write_idx(root)
    c = Controller(ctl_bin, d).start()
    u = c.base
    try:
        w = FakeWorker(c, "w")
        w.register()
        ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": root})
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "hb", "network_arch": "mlp", "train_datasets": [ds["id"]],
                    "automl_settings": {"automl_enabled": True, "automl_algorithm": "hyperband",
                                        "automl_R": 9, "automl_nu": 3,
                                        "automl_max_parallel": 1}})
        aj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"],
                  {"action": "automl", "name": "search1"})
        _, st = drive(c, [w], aj["id"])
        assert st["status"] == "done", st

        # 1. names for ids
        assert json.loads(ok(u, "dataset", "get", "tiny", "--json"))["id"] == ds["id"]
        assert json.loads(ok(u, "experiment", "get", "hb", "--json"))["id"] == exp["id"]
        assert json.loads(ok(u, "job", "status", "search1", "--json"))["id"] == aj["id"]
        # a detection set (KITTI, train/ and val/), its experiment's metric val_map
        kitti = os.path.join(d, "kitti")
        write_kitti(os.path.join(kitti, "train"), images=40)
        write_kitti(os.path.join(kitti, "val"), images=8)
        dds = c.ok("POST", "/api/v1/datasets", {"name": "boxes", "path": kitti,
                                                "type": "object_detection", "format": "kitti"})
        e2 = json.loads(ok(u, "experiment", "create", "--name", "det", "--network",
                           "detectnet_v2", "--train-dataset", "boxes", "--json"))
        assert e2["train_datasets"] == [dds["id"]] and e2["metric"] == "val_map", e2
        tj = json.loads(ok(u, "train", "start", "--experiment", "det", "--spec",
                           "train.epochs=3", "--name", "first", "--json"))
        assert tj["experiment_id"] == e2["id"], tj
        listed = json.loads(ok(u, "job", "list", "--experiment", "det", "--json"))["jobs"]
        assert [j["id"] for j in listed] == [tj["id"]], listed
        ds2 = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": root})
        rc, so, se = hone(u, "dataset", "get", "tiny")
        assert rc == 2 and ds["id"] in se and ds2["id"] in se and "matches 2 datasets" in se, \
            (rc, so, se)
        assert json.loads(ok(u, "dataset", "get", ds2["id"], "--json"))["id"] == ds2["id"]

        # 2. --json errors
        rc, so, se = hone(u, "--json", "dataset", "get", "nope")
        err = json.loads(se)
        assert rc == 1 and so == "" and err["error"] == "no dataset nope", (rc, so, se)
        assert err["field"] == "id" and err["exit"] == 1, err
        rc, so, se = hone(u, "dataset", "get", "tiny", "--json")
        err = json.loads(se)
        assert rc == 2 and err["field"] == "id" and ds2["id"] in err["error"], (rc, se)

        # 3. did you mean: spec keys, the algorithm (the controller's own messages)
        rc, so, se = hone(u, "experiment", "update", "hb", "--spec", "train.lrr=0.1")
        assert rc == 1 and "did you mean train.lr?" in se, (rc, so, se)
        s, body = c.req("PATCH", "/api/v1/experiments/" + exp["id"],
                        {"automl_settings": {"automl_algorithm": "grid"}})
        msg = body["error"]["message"]
        assert s == 422 and msg.endswith("must be one of: bayesian hyperband asha bohb dehb random hyperband_es"), \
            body
        s, body = c.req("PATCH", "/api/v1/experiments/" + exp["id"],
                        {"automl_settings": {"automl_algorithm": "hyperbnd"}})
        assert s == 422 and "(did you mean hyperband?)" in body["error"]["message"], body
        rc, so, se = hone(u, "automl", "start", "--experiment", "hb", "--algorithm", "hyperbnd")
        assert rc == 1 and "hyperband_es (did you mean hyperband?)" in se and " b h" not in se, se
        rc, so, se = hone(u, "--json", "automl", "start", "--experiment", "hb", "--algorithm", "x")
        err = json.loads(se)
        assert rc == 1 and err["field"] == "automl_settings.automl_algorithm", (rc, se)
        rc, so, se = hone(u, "experiment", "create", "--name", "x", "--network", "resnet19",
                          "--train-dataset", ds["id"])
        assert rc == 1 and "did you mean resnet18?" in se, (rc, se)
        s, body = c.req("PATCH", "/api/v1/experiments/" + exp["id"],
                        {"automl_settings": {"automl_algorithm": "h"}})  # TAO's alias still works
        assert s == 200 and body["automl_settings"]["automl_algorithm"] == "hyperband", (s, body)

        # 4. job status of an AutoML job: short, nothing twice; the trials behind `job trials`
        so = ok(u, "job", "status", aj["id"])
        lines = so.splitlines()
        assert len(lines) <= 40, so
        assert so.count("best_config") == 0 and so.count("search_space") == 0, so
        best = st["automl"]["best_job_id"]
        assert re.search(r"^best +val_accuracy %.4f" % st["automl"]["best_metric"], so, re.M), so
        assert so.count(best) == 2, so  # the best line and its row in the trial table
        assert "hone job trials %s" % aj["id"] in so, so
        trials = c.ok("GET", "/api/v1/jobs?parent=" + aj["id"])["jobs"]
        so = ok(u, "job", "trials", "search1")
        assert all(t["id"] in so for t in trials) and len(trials) > 10, so
        full = json.loads(ok(u, "job", "status", aj["id"], "--json"))
        server = c.ok("GET", "/api/v1/jobs/" + aj["id"])  # the whole job (rates move, keys not)
        assert full.keys() == server.keys() and full["automl"].keys() == server["automl"].keys()
        assert full["result"]["best_job_id"] == best and full["automl"]["search_space"], full

        # 5. job metrics --csv: the controller's CSV, value for value
        so = ok(u, "job", "metrics", "search1", "--csv")
        mine = list(csv.reader(io.StringIO(so)))
        s, raw = c.req("GET", "/api/v1/jobs/%s/metrics?format=csv" % aj["id"])
        theirs = list(csv.reader(io.StringIO(raw.decode() if isinstance(raw, bytes) else raw)))
        assert mine[0] == theirs[0] == ["trial", "epoch", "seconds", "train_loss", "val_accuracy",
                                        "val_loss"], (mine[0], theirs[0])
        key = lambda r: (int(r[0]), int(r[1]))  # noqa: E731
        assert len(mine) == len(theirs) > 20, (len(mine), len(theirs))
        for a, b in zip(sorted(mine[1:], key=key), sorted(theirs[1:], key=key)):
            assert [float(x) for x in a] == [float(x) for x in b] or \
                all(abs(float(x) - float(y)) < 1e-9 for x, y in zip(a, b)), (a, b)

        # 6. val_map through the progress line, job status and job metrics
        job = w.lease(wait=5)
        if job and job["action"] == "convert":  # the KITTI set packed first, as hone-pack would
            with open(job["out_path"], "wb") as f:
                f.write(b"HONEPAK\0")
            w.complete(job, "done", {"event": "done", "images": 48})
            job = w.lease(wait=5)
        assert job and job["id"] == tj["id"], job
        fake_model(job)
        for e in range(1, 4):
            s, js = w.report(job, e, {"val_map": 0.25 * e, "val_loss": 1.0 / e, "seconds": 0.01})
            assert s == 200, (s, js)
        w.complete(job, "done", {"test_map": 0.7})
        rc, so, se = hone(u, "job", "wait", "first")
        assert rc == 0 and "epoch 3/3 | val_map 0.7500" in so, (rc, so, se)
        so = ok(u, "job", "status", "first")
        assert re.search(r"^best +val_map 0.7500 at epoch 3", so, re.M), so
        so = ok(u, "job", "metrics", "first")
        head = so.splitlines()[0].split()
        assert head[:1] == ["EPOCH"] and "MAP" in head, so
        assert re.search(r"^3 .*0\.7500", so, re.M), so

        # 7. evaluate: its own progress, no training line
        p = subprocess.Popen([HONE, "--url", u, "job", "evaluate", "first"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ev = None
        for _ in range(200):
            ev = w.lease(wait=1)
            if ev:
                break
        assert ev and ev["action"] == "evaluate", ev
        w.complete(ev, "done", {"images": 20, "accuracy": 0.5, "loss": 1.0,
                                "classes": [str(i) for i in range(10)],
                                "per_class_accuracy": [0.5] * 10,
                                "confusion_matrix": [[2 if i == j else 0 for j in range(10)]
                                                     for i in range(10)]})
        so, se = p.communicate(timeout=120)
        assert p.returncode == 0, (so, se)
        assert "epoch 0/0" not in se and "val_accuracy -" not in se, se
        assert "evaluate of %s" % tj["id"] in se, se

        # a job that ended badly, waited for under --json: the job on stdout, the error as JSON
        fj = json.loads(ok(u, "train", "start", "--experiment", "det", "--json"))
        ok(u, "job", "cancel", fj["id"])
        rc, so, se = hone(u, "--json", "job", "wait", fj["id"])
        err = json.loads(se)
        assert rc == 1 and json.loads(so)["status"] == "canceled", (rc, so, se)
        assert err["exit"] == 1 and ("job %s canceled" % fj["id"]) in err["error"], err

        # a job that failed: its error in job status line by line, under --json the JSON error
        fj = json.loads(ok(u, "train", "start", "--experiment", "det", "--json"))
        for _ in range(10):  # failed for good after the controller's attempts
            if c.ok("GET", "/api/v1/jobs/" + fj["id"])["status"] == "failed":
                break
            job = w.lease(wait=5)
            assert job and job["id"] == fj["id"], job
            c.ok("POST", "/api/v1/jobs/%s/complete" % job["id"],
                 {"worker_id": w.id, "status": "failed", "log_tail": "first line\nsecond line\n",
                  "final": {}}, headers=w.headers)
        so = ok(u, "job", "status", fj["id"])
        assert re.search(r"^status +failed$", so, re.M), so
        assert re.search(r"^error +second line$", so, re.M), so  # the cause: the last line
        assert re.search(r"^last lines first line$", so, re.M), so  # then the tail, a line each
        assert re.search(r"^ {11}second line$", so, re.M), so
        rc, so, se = hone(u, "--json", "job", "wait", fj["id"])
        err = json.loads(se)
        assert rc == 1 and "second line" in err["error"] and err["exit"] == 1, (rc, se)

        # 8. curves: a trial stopped after one epoch is drawn
        so = ok(u, "job", "curves", "search1", "--out", "-")
        stored = c.ok("GET", "/api/v1/jobs/%s/metrics" % aj["id"])["trials"]
        one = {"trial " + k for k, v in stored.items() if len(v) == 1}
        circles = set(re.findall(r'<circle data-label="([^"]+)"', so))
        assert one and circles == one, (one, circles)

        # 9. completion: ids and names from the controller, values from the tables
        got = complete(u, "job", "status", "")
        assert aj["id"] in got and "search1" in got and tj["id"] in got, got
        assert complete(u, "train", "start", "--experiment", "") >= {exp["id"], e2["id"], "hb", "det"}
        assert ds["id"] in complete(u, "experiment", "create", "--train-dataset", "")
        assert complete(u, "automl", "start", "--algorithm", "") == \
            {"bayesian", "hyperband", "asha", "bohb", "dehb", "random", "hyperband_es"}
        assert "detectnet_v2" in complete(u, "experiment", "create", "--network", "")
        assert "train.lr=" in complete(u, "train", "start", "--spec", "train.l")
        assert "running" in complete(u, "job", "list", "--status", "")
        t0 = time.time()
        assert complete("http://127.0.0.1:9", "job", "status", "") == set()
        assert time.time() - t0 < 30
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
