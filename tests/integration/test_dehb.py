"""DEHB end to end (issue 31): a real controller and two real workers on loopback, real training on
the CPU, driven through the hone CLI, on a Fashion-MNIST slice (the IDX files; 1000 training, 300
validation and 200 test images, an mlp).

`hone automl start --algorithm dehb --R 4 --nu 2 --epoch-multiplier 1 --max-parallel 2` ends done
with Hyperband's bracket plan for R 4, eta 2 (search/dehb.c, first pass): brackets of 4, 3 and 3
trials, 10 trials in all, which stop at epochs 1, 1, 2, 4 | 2, 2, 4 | 4, 4, 4 (28 epochs); the
search's log names the algorithm, halts trials at rungs, promotes the best by resuming them from
their checkpoints and stops the other 5 early; the experiment's own spec is one full-budget trial
(automl_start_from_spec); the best trial is a finished one and its model is the job's best_model.
On the old code the controller refused the algorithm (422 automl_settings.automl_algorithm).

usage: test_dehb.py HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
Exits 77 without Fashion-MNIST."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
import fmnist_folder  # noqa: E402

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def hone_json(bins, ctl, *args):
    return json.loads(hone(bins, ctl, *(list(args) + ["--json"])).stdout)


def run(bins, ctl, fm):
    ds = hone_json(bins, ctl, "dataset", "create", "--name", "fmnist", "--path", fm,
                   "--format", "idx")["id"]
    exp = hone_json(bins, ctl, "experiment", "create", "--name", "dehb", "--network", "mlp",
                    "--train-dataset", ds, "--spec", "data.train_limit=1000",
                    "--spec", "data.val_size=300", "--spec", "data.test_limit=200",
                    "--spec", "model.hidden=32", "--spec", "train.batch_size=64")["id"]
    automl = hone_json(bins, ctl, "automl", "start", "--experiment", exp, "--algorithm", "dehb",
                       "--R", "4", "--nu", "2", "--epoch-multiplier", "1", "--max-parallel", "2",
                       "--seed", "5")["id"]
    p = hone(bins, ctl, "job", "wait", automl, "--timeout", "500", check=False)
    st = hone_json(bins, ctl, "job", "status", automl)
    assert p.returncode == 0 and st["status"] == "done", (p.stdout, p.stderr, st.get("error"))
    au = st["automl"]
    ts = hone_json(bins, ctl, "job", "list", "--parent", automl)["jobs"]
    epochs = sorted(t["epoch"] for t in ts)
    print("dehb: %d trials, epochs %s, best %s" % (len(ts), epochs, st["result"]["best_metric"]))
    assert len(ts) == 10 and au["trials_failed"] == 0, (len(ts), au)
    assert epochs == [1, 1, 2, 2, 2, 4, 4, 4, 4, 4], epochs
    assert all(t["status"] in ("done", "stopped") for t in ts), ts
    assert au["trials_stopped_early"] == 5 and au["epochs_remaining"] == 0, au
    logs = hone(bins, ctl, "job", "logs", automl).stdout
    for want in (r"^%s search started: dehb, " % ISO,
                 r"^%s trial \d+ halted at the rung of epoch 1 \(val_accuracy [\d.]+\)" % ISO,
                 r"^%s trial \d+ promoted: resumes from its checkpoint to train until epoch 2$"
                 % ISO,
                 r"^%s trial \d+ promoted: resumes from its checkpoint to train until epoch 4$"
                 % ISO,
                 # of the 5 stopped early, those still waiting at their rung when the search
                 # ended (how many depends on the order two workers report in)
                 r"^%s [1-5] trials? halted at a rung and not promoted: stopped$" % ISO,
                 r"^%s trial 7 launched \(job job-\w+\) for 4 epochs: " % ISO,
                 r"^%s search done: best trial \d+ \(job job-\w+\) val_accuracy" % ISO):
        assert re.search(want, logs, re.M), (want, logs)
    # four promotions (R 4, eta 2: 2 + 1 in the first bracket, 1 in the second), each a resume
    assert len(re.findall(r"promoted: resumes from its checkpoint", logs)) == 4, logs
    # the best is a finished trial with a metric, and best_model/ is its model
    best = [t for t in ts if t["id"] == st["result"]["best_job_id"]]
    assert best and best[0]["status"] in ("done", "stopped"), (st["result"], ts)
    assert st["result"]["best_metric"] == max(t["result"]["best_metric"] for t in ts
                                              if t["result"]["best_metric"] is not None)
    with urllib.request.urlopen(ctl.base + "/api/v1/jobs/%s/artifacts" % automl,
                                timeout=30) as r:
        files = {f["name"] for f in json.loads(r.read())["files"]}
    assert "best_model/model.bin" in files and \
        "best_model/recommendation_%d.yaml" % best[0]["trial"] in files, files
    return st


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    bins = dict(zip(("hone", "ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[1:])))
    root = tempfile.mkdtemp(prefix="hone-dehb-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots:\n  - %s\n  - %s\n" % (json.dumps(data), json.dumps(fm)))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    ctl = ControllerProcess(bins["ctl"], data, config=cfg).start()
    workers = []
    try:
        workers = [WorkerProcess(bins["worker"], bins["train"], root, "w%d" % i, ctl.base).start()
                   for i in (1, 2)]
        run(bins, ctl, fm)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n" % ctl.tail())
        for w in workers:
            sys.stderr.write("---- worker %s\n%s\n" % (w.name, w.text()[-3000:]))
        raise
    finally:
        for w in workers:
            w.stop()
        rc = ctl.stop()
    assert rc == 0, "controller exited %d:\n%s" % (rc, ctl.tail())
    shutil.rmtree(root, ignore_errors=True)
    print("dehb: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
