"""Failures a person can read (issue 28), through the hone CLI against a real controller and real
workers on loopback, on a 100-image PNG folder:

1. An AutoML search whose every trial fails ends after max_failed_trials (auto: 3 while no trial
   has a metric), not after its 20 trials: `hone job wait` exits 1 naming the trials' common cause
   ("3 of N trials failed: data.val_size: 5000 leaves no training images ...") and the trainer's
   last lines, its progress line
   counts the failed trials as failed, `hone job status` shows the cause, `hone job logs` of the
   AutoML job holds the search's decisions (each trial launched, each failure with its cause, the
   end and its reason) and the trials' trainer lines; a trial's error is the cause, one line, its
   error_log and `hone job logs` the trainer's last lines. With `--max-failed-trials 2` the same
   search ends at 2.
2. A Hyperband search in which one configuration fails (train.batch_size 200 runs out of memory)
   goes on and ends done: the failed trials are counted as failed, the search's log has its rungs
   (halts), promotions, early stops, the failure with its cause, and its end; the failed trial's
   stderr tail (its last 20 lines of 30) is its error_log and is in `hone job logs`; a trained
   trial's log has one line per epoch with its metrics and seconds under an ISO 8601 UTC time, and
   the trainer's "first step done" line an ISO 8601 time instead of Unix seconds.

The controller refuses data.val_size 5000 on 100 images when a spec or a search space sets it, so
the failures come from a wrapper around the real hone-train that only the trainer sees: in (1) it
adds --set data.val_size=5000 (the real trainer then fails with its real message, as it does when
a folder changed after its check); in (2) it prints an allocator's out-of-memory lines and exits 1
for batch size 200 (a CPU has no device memory to run out of), and runs the real trainer otherwise.

usage: test_failures.py HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from pngfolder import write_folder  # noqa: E402

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
CAUSE = "data.val_size: 5000 leaves no training images"

WRAPPER = r'''#!/usr/bin/env python3
import json, os, sys
real, mode = os.environ["HONE_TEST_REAL_TRAIN"], os.environ["HONE_TEST_FAIL_MODE"]
args = sys.argv[1:]
if "--spec" in args and mode == "val_size":
    os.execv(real, [real] + args + ["--set", "data.val_size=5000"])
if "--spec" in args and mode == "oom":
    spec = json.load(open(args[args.index("--spec") + 1]))
    if spec.get("train.batch_size") == 200:
        for i in range(30):
            sys.stderr.write("fake-alloc: block %d of 30 reserved\n" % (i + 1))
        sys.stderr.write("hone-train: out of memory: train.batch_size 200 needs 81.2 GiB, "
                         "the device has 79.1 GiB\n")
        sys.exit(1)
os.execv(real, [real] + args)
'''


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=400)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def hone_json(bins, ctl, *args):
    return json.loads(hone(bins, ctl, *(list(args) + ["--json"])).stdout)


def trials(bins, ctl, automl):
    return hone_json(bins, ctl, "job", "list", "--parent", automl)["jobs"]


def experiment(bins, ctl, root, name, specs):
    ds = hone_json(bins, ctl, "dataset", "create", "--name", name, "--path",
                   os.path.join(root, "data", "pngs"), "--format", "image_folder")["id"]
    args = ["experiment", "create", "--name", name, "--network", "mlp", "--train-dataset", ds]
    for s in specs:
        args += ["--spec", s]
    return hone_json(bins, ctl, *args)["id"]


def all_failing(bins, ctl, root):
    exp = experiment(bins, ctl, root, "fails", ["data.val_size=20", "train.epochs=2"])
    automl = hone_json(bins, ctl, "automl", "start", "--experiment", exp, "--algorithm", "random",
                       "--max-recommendations", "20", "--max-parallel", "2")["id"]
    p = hone(bins, ctl, "job", "wait", automl, "--timeout", "300", check=False)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert CAUSE in p.stderr and "trials failed" in p.stderr, p.stderr
    # and the last lines behind it, one a line
    assert re.search(r"^last lines \(hone job logs %s\):\n  hone-train: %s" %
                     (automl, re.escape(CAUSE)), p.stderr, re.M), p.stderr
    # the progress line counts them as failed, not done
    assert re.search(r"failed \| trials 0 done, 3 failed, 0 running", p.stdout), p.stdout
    st = hone_json(bins, ctl, "job", "status", automl)
    m = re.match(r"3 of (\d+) trials failed: %s \(the training file has \d+\)[^()]*(\([^()]*\))? \(the search ends "
                 r"at 3 failed trials: max_failed_trials auto\)$" % re.escape(CAUSE),
                 st["error"] or "")
    assert st["status"] == "failed" and m, st["error"]
    made = int(m.group(1))
    assert 3 <= made <= 5, ("the search went on past its limit", made)  # 3 + 2 in flight
    au = st["automl"]
    assert au["trials_failed"] == 3 and au["trials_done"] == 0, au
    assert au["max_failed_trials"] == 3 and au["max_failed_trials_auto"] is True, au
    assert "hone-train: " + CAUSE in (st["error_log"] or ""), st["error_log"]
    assert len(trials(bins, ctl, automl)) == made < 20
    text = hone(bins, ctl, "job", "status", automl).stdout
    assert CAUSE in text, text
    logs = hone(bins, ctl, "job", "logs", automl).stdout
    for want in (r"^%s search started: random, 20 trials at most, 2 at once, maximizing "
                 r"val_accuracy" % ISO,
                 r"^%s trial 0 launched \(job job-\w+\) for 2 epochs: \{" % ISO,
                 r"^%s trial \d+ failed \(job job-\w+\): %s" % (ISO, re.escape(CAUSE)),
                 r"^\[trial \d+\] hone-train: %s" % re.escape(CAUSE),
                 r"^%s search failed: 3 of \d+ trials failed: %s" % (ISO, re.escape(CAUSE))):
        assert re.search(want, logs, re.M), (want, logs)
    failed = [t for t in trials(bins, ctl, automl) if t["status"] == "failed"]
    assert len(failed) == 3, failed
    t = hone_json(bins, ctl, "job", "status", failed[0]["id"])
    assert t["error"].startswith(CAUSE) and "\n" not in t["error"], t["error"]
    assert "hone-train: " + CAUSE in t["error_log"], t["error_log"]
    tl = hone(bins, ctl, "job", "logs", failed[0]["id"]).stdout
    assert "hone-train: " + CAUSE in tl, tl
    # the same cause twice: the job's own, not tried a third time
    assert re.search(r"^%s failed after 2 attempts: %s.* \(the same cause as the attempt before: "
                     r"not tried again\)$" % (ISO, re.escape(CAUSE)), tl, re.M), tl

    # --max-failed-trials 2: the same search ends at 2
    automl = hone_json(bins, ctl, "automl", "start", "--experiment", exp, "--algorithm", "random",
                       "--max-recommendations", "20", "--max-parallel", "1",
                       "--max-failed-trials", "2")["id"]
    hone(bins, ctl, "job", "wait", automl, "--timeout", "300", check=False)
    st = hone_json(bins, ctl, "job", "status", automl)
    assert st["status"] == "failed" and st["automl"]["trials_failed"] == 2, st["automl"]
    assert st["error"].startswith("2 of ") and "max_failed_trials)" in st["error"], st["error"]
    print("all failing: %s" % st["error"])


def one_config_fails(bins, ctl, root):
    exp = experiment(bins, ctl, root, "oom", ["data.val_size=20", "train.batch_size=16"])
    automl = hone_json(bins, ctl, "automl", "start", "--experiment", exp, "--algorithm",
                       "hyperband", "--R", "4", "--nu", "2", "--max-recommendations", "12",
                       "--max-parallel", "2", "--seed", "3",
                       "--param", "train.batch_size=16,24,32,200",
                       "--param", "train.lr=float:0.01:0.3:log")["id"]
    p = hone(bins, ctl, "job", "wait", automl, "--timeout", "400", check=False)
    st = hone_json(bins, ctl, "job", "status", automl)
    au = st["automl"]
    assert p.returncode == 0 and st["status"] == "done", (p.stdout, p.stderr, st["error"])
    assert st["error"] is None and st["error_log"] is None, st
    assert au["trials_failed"] >= 1 and au["trials_done"] >= 1, au
    assert re.search(r"done \| trials \d+ done, %d failed" % au["trials_failed"], p.stdout), \
        p.stdout
    logs = hone(bins, ctl, "job", "logs", automl).stdout
    for want in (r"^%s trial \d+ failed \(job job-\w+\): out of memory: train.batch_size 200" % ISO,
                 r"^%s trial \d+ halted at the rung of epoch \d+ \(val_accuracy [\d.]+\)" % ISO,
                 r"^%s trial \d+ promoted: resumes from its checkpoint" % ISO,
                 r"^%s trial \d+ stopped early at epoch \d+ of a budget of 4 \(val_accuracy "
                 r"[\d.]+\): not among the best of its rung" % ISO,
                 r"^%s new best: trial \d+ val_accuracy [\d.]+ at epoch \d+" % ISO,
                 r"^%s trial \d+ (done|stopped) after epoch \d+: best val_accuracy" % ISO,
                 r"^%s search done: best trial \d+ \(job job-\w+\) val_accuracy" % ISO):
        assert re.search(want, logs, re.M), (want, logs)
    if os.environ.get("HONE_TEST_SHOW"):
        print(logs)
    ts = trials(bins, ctl, automl)
    bad = [t for t in ts if t["status"] == "failed"]
    good = [t for t in ts if t["status"] in ("done", "stopped") and t["epoch"] >= 2]
    assert bad and good, ts
    t = hone_json(bins, ctl, "job", "status", bad[0]["id"])
    assert t["error"].startswith("out of memory: train.batch_size 200"), t["error"]
    lines = t["error_log"].split("\n")
    assert len(lines) == 20 and "block 30 of 30" in t["error_log"], lines
    assert "block 1 of 30" not in t["error_log"], lines
    tl = hone(bins, ctl, "job", "logs", bad[0]["id"]).stdout
    assert "fake-alloc: block 30 of 30 reserved" in tl and "out of memory" in tl, tl
    tl = hone(bins, ctl, "job", "logs", good[0]["id"]).stdout
    assert re.search(r"hone-train: first step done at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$",
                     tl, re.M), tl
    num = r"[\d.e+-]+"
    epochs = re.findall(r"^%s epoch (\d+)/\d+: train_loss %s, train_accuracy %s, val_loss %s, "
                        r"val_accuracy %s, lr %s, [\d.]+ s \(\d+ images/s\)$" %
                        (ISO, num, num, num, num, num), tl, re.M)
    assert [int(e) for e in epochs] == list(range(1, good[0]["epoch"] + 1)), (epochs, tl)
    print("one failing configuration: %d of %d trials failed, the search ended done" %
          (au["trials_failed"], len(ts)))


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    bins = dict(zip(("hone", "ctl", "worker", "train", "pack"),
                    (os.path.abspath(a) for a in sys.argv[1:])))
    root = tempfile.mkdtemp(prefix="hone-failures-")
    write_folder(os.path.join(root, "data", "pngs"), classes=2, per_class=50, size=16, rgb=False)
    wrapper = os.path.join(root, "hone-train-wrapper")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    os.environ["HONE_TEST_REAL_TRAIN"] = bins["train"]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data")).start()
    workers = []
    try:
        for mode, fn in (("val_size", all_failing), ("oom", one_config_fails)):
            os.environ["HONE_TEST_FAIL_MODE"] = mode
            workers = [WorkerProcess(bins["worker"], wrapper, root, "%s%d" % (mode, i), ctl.base,
                                     extra=["--packer", bins["pack"], "--no-resident"]).start()
                       for i in (1, 2)]
            fn(bins, ctl, root)
            for w in workers:
                w.stop()
            workers = []
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
    # non-zero under ASan when LeakSanitizer found a leak
    assert rc == 0, "controller exited %d:\n%s" % (rc, ctl.tail())
    print("failures: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
