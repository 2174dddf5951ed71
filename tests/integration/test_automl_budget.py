"""An AutoML job with a time budget (issue 31): a real controller and a real worker on loopback,
real training on the CPU on a Fashion-MNIST slice, driven through the hone CLI.

`hone automl start --budget-minutes 0.5 --epoch-seconds 1 --max-recommendations 2` on ASHA:
  - the count cap does not end the search: more than 2 trials run, until the budget says stop;
  - the job ends within its budget (a generous bound: 30 s + 15 s for a loaded CI machine);
  - its status has the budget's fields (seconds, used, left, the epoch-time estimate, the plan,
    the note of what the budget cut), `hone job status` prints "budget 30s: .. used, .. left" and
    `hone job wait`'s progress line "budget .. of 30s";
  - its best model is a finished trial: status done, its test accuracy in the job's result;
  - a bad budget is refused: 422 naming automl_settings.automl_budget_minutes, a CLI usage error
    naming --budget-minutes; nothing stored changes.
The old controller refused the setting (an unknown field) and the CLI the flag.

usage: test_automl_budget.py HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
Exits 77 without Fashion-MNIST."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
import fmnist_folder  # noqa: E402

BUDGET_MIN = 0.5


def api(ctl, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(ctl.base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def run(bins, ctl, fm):
    st, ds = api(ctl, "POST", "/api/v1/datasets", {"name": "fmnist", "path": fm, "format": "idx"})
    assert st == 201, ds
    st, exp = api(ctl, "POST", "/api/v1/experiments", {
        "name": "budget", "network_arch": "mlp", "train_datasets": [ds["id"]],
        "specs": {"data": {"train_limit": 2000, "val_size": 500, "test_limit": 500},
                  "model": {"hidden": 32}, "train": {"batch_size": 64}}})
    assert st == 201, exp

    # refusals first: nothing stored changes
    before = api(ctl, "GET", "/api/v1/experiments/" + exp["id"])[1]["automl_settings"]
    for bad in (0, -1, "5", 1e6):
        st, js = api(ctl, "PATCH", "/api/v1/experiments/" + exp["id"],
                     {"automl_settings": {"automl_budget_minutes": bad}})
        assert st == 422 and js["error"]["field"] == "automl_settings.automl_budget_minutes", \
            (bad, st, js)
    p = hone(bins, ctl, "automl", "start", "--experiment", exp["id"], "--budget-minutes", "0",
             check=False)
    assert p.returncode == 2 and "--budget-minutes" in p.stderr, (p.returncode, p.stderr)
    after = api(ctl, "GET", "/api/v1/experiments/" + exp["id"])[1]["automl_settings"]
    assert before == after, (before, after)
    # the budget: 30 s for the whole search, a count cap of 2 that it must not stop at
    t0 = time.time()
    p = hone(bins, ctl, "automl", "start", "--experiment", exp["id"], "--algorithm", "asha",
             "--budget-minutes", str(BUDGET_MIN), "--epoch-seconds", "1",
             "--max-recommendations", "2", "--max-parallel", "1", "--json")
    job = json.loads(p.stdout)
    jid = job["id"]
    a = job["automl"]
    assert a["budget_seconds"] == BUDGET_MIN * 60, a
    assert a["budget_plan"]["full_epochs"] >= 1, a
    seen_live = None
    while True:
        st, j = api(ctl, "GET", "/api/v1/jobs/" + jid)
        assert st == 200, j
        if j["status"] in ("done", "failed", "canceled"):
            break
        if j["automl"]["trials_running"] and seen_live is None:
            seen_live = j["automl"]
            text = hone(bins, ctl, "job", "status", jid).stdout
            assert "budget     30s: " in text and " used, " in text and " left" in text, text
        assert time.time() - t0 < BUDGET_MIN * 60 + 60, ("still running past the budget", j)
        time.sleep(0.5)
    took = time.time() - t0
    assert j["status"] == "done", j
    a = j["automl"]
    used = j["finished_unix"] - j["started_unix"] if j.get("finished_unix") else None
    print("budget %.0f s: job ended after %.1f s (%s s by the controller's clock); %s" % (
        BUDGET_MIN * 60, took, used, a["budget_note"]))
    assert used is None or used <= BUDGET_MIN * 60 + 15, (used, a)
    assert took <= BUDGET_MIN * 60 + 15, took
    assert a["budget_used_seconds"] <= BUDGET_MIN * 60 + 15, a
    assert a["budget_left_seconds"] >= 0 and isinstance(a["budget_note"], str), a
    assert a["budget_note"].startswith("budget 30 s, used "), a["budget_note"]
    assert a["budget_epoch_seconds"] > 0, a
    trials = api(ctl, "GET", "/api/v1/jobs?parent=" + jid)[1]["jobs"]
    assert len(trials) > 2, ("the count cap ended a budgeted search", len(trials))
    # the best model is a finished trial: trained its whole schedule, with its test accuracy
    res = j["result"]
    best = [t for t in trials if t["id"] == res["best_job_id"]]
    assert best and best[0]["status"] == "done", (res, best)
    assert isinstance(res["best_test_accuracy"], float) and res["best_test_accuracy"] > 0.5, res
    assert res["budget"]["best_finished"] is True, res["budget"]
    text = hone(bins, ctl, "job", "status", jid).stdout
    assert "budget cut " in text and "budget     30s: " in text, text
    text = hone(bins, ctl, "job", "wait", jid).stdout  # the progress line: its use of the budget
    assert " | budget " in text and " of 30s | " in text, text
    logs = hone(bins, ctl, "job", "logs", jid).stdout
    assert "budget 0.5 min, ~1.00 s an epoch (automl_epoch_seconds), 1 at once: R " in logs, logs
    print("automl budget: ok (%d trials, best test accuracy %.4f, trial %s)" % (
        len(trials), res["best_test_accuracy"], res["best_trial"]))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    bins = dict(zip(("hone", "ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[1:])))
    root = tempfile.mkdtemp(prefix="hone-budget-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots:\n  - %s\n  - %s\n" % (json.dumps(data), json.dumps(fm)))
    ctl = ControllerProcess(bins["ctl"], data, config=cfg)
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base).start()
    try:
        run(bins, ctl, fm)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), w.text()[-4000:]))
        raise
    finally:
        w.stop()
        rc = ctl.stop()
    if rc != 0:  # under ASan: LeakSanitizer's findings
        sys.stderr.write("controller exited %d\n%s\n" % (rc, ctl.tail()))
        return 1
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
