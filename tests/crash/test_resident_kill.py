#!/usr/bin/env python3
"""kill -9 a worker's resident trainer (hone-worker --resident: one hone-train --serve kept between
jobs) in the middle of an AutoML trial, after epoch >= 2 was acknowledged. The worker must report
the trial failed, the controller retry it, and the same worker resume it on a new resident trainer
from its checkpoint (the first epoch reported again is after the last acknowledged one, never 1).
The trial ends with every epoch stored exactly once, and with the numbers of an uninterrupted
hone-train of the trial's own spec.yaml (train_loss, val_accuracy of every epoch, test accuracy).
A second trial then runs on that same resident trainer (no new hone-train --serve).
Usage: test_resident_kill.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN [--keep]"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crash_util import Controller, WorkerProcess, fmnist_dir, wait_for  # noqa: E402


class Worker(WorkerProcess):
    def __init__(self, binary, trainer, root, name, url):
        super().__init__(binary, trainer, root, name, url, extra=["--verbose", "--resident"])

    def acked(self):
        return [(m.group(1), int(m.group(2))) for m in
                re.finditer(r"job (\S+): epoch (\d+) reported, decision", self.text())]


def servers(worker_pid):
    """Pids of the worker's hone-train --serve children."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == worker_pid and b"--serve" in cmd:
            out.append(int(d))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("controller")
    ap.add_argument("worker")
    ap.add_argument("trainer")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    fm = fmnist_dir()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    root = tempfile.mkdtemp(prefix="hone-crash-res-")
    ctl = Controller(a.controller, root, "log_format: text\nheartbeat_seconds: 1\n"
                     "lease_seconds: 4\ndata_roots: [\"%s\", \"%s\"]\n" % (root, fm))
    wa = Worker(a.worker, a.trainer, root, "a", ctl.base)
    ok = False
    try:
        ctl.start()
        wa.start()
        ds = ctl.ok("POST", "/api/v1/datasets", {"name": "fm", "type": "image_classification",
                                                 "format": "idx", "path": fm})["id"]
        epochs = 8
        exp = ctl.ok("POST", "/api/v1/experiments", {
            "name": "reskill", "network_arch": "mlp", "train_datasets": [ds],
            "metric": "val_accuracy",
            "specs": {"data": {"train_limit": 20000, "val_size": 500, "test_limit": 1000},
                      "model": {"hidden": 64}, "train": {"epochs": epochs, "batch_size": 32}},
            "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                "automl_max_recommendations": 2, "automl_max_parallel": 1}})["id"]
        job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "automl"})["id"]
        acked = wait_for(lambda: [x for x in wa.acked() if x[1] >= 2], 120, 0.05,
                         "worker a to get epoch 2 acknowledged")
        trial = acked[0][0]
        first = servers(wa.proc.pid)
        assert len(first) == 1, "want one resident trainer, found %s" % first
        os.kill(first[0], signal.SIGKILL)
        last_a = max(e for j, e in wa.acked() if j == trial)
        print("killed the resident trainer %d after epoch %d of %s was acknowledged" % (
            first[0], last_a, trial))
        assert last_a < epochs, "the trial finished before the kill; make it longer"
        wait_for(lambda: [e for j, e in wa.acked() if j == trial][-1] > last_a, 120, 0.05,
                 "the trial to resume")
        resumed = servers(wa.proc.pid)
        assert len(resumed) == 1 and resumed[0] != first[0], "no new trainer: %s" % resumed
        wait_for(lambda: ctl.ok("GET", "/api/v1/jobs/%s" % job)["status"] in
                 ("done", "failed", "canceled"), 240, 0.5, "the AutoML job to finish")
        js = ctl.ok("GET", "/api/v1/jobs/%s" % job)
        assert js["status"] == "done", js
        t = ctl.ok("GET", "/api/v1/jobs/%s" % trial)
        assert t["status"] == "done" and t["epoch"] == epochs, t
        assert t.get("attempts", 1) >= 1, t
        eps = [e for j, e in wa.acked() if j == trial]
        after = eps[eps.index(last_a) + 1:]
        assert after and 1 < after[0] <= last_a + 1, "resumed at %s after %d" % (after, last_a)
        ms = ctl.ok("GET", "/api/v1/jobs/%s/metrics" % trial)["metrics"]
        assert [m["epoch"] for m in ms] == list(range(1, epochs + 1)), ms
        # an uninterrupted run of the trial's own spec
        art = os.path.join(root, "data", "artifacts", trial)
        p = subprocess.run([a.trainer, "--spec", os.path.join(art, "spec.yaml"), "--device",
                            "cpu", "--threads", "1"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        ref = {x["epoch"]: x for x in lines if "epoch" in x}
        for m in ms:
            for k in ("train_loss", "val_accuracy"):
                assert abs(m[k] - ref[m["epoch"]][k]) <= 1e-6 * max(1, abs(m[k])), (
                    "epoch %d %s: %s, uninterrupted %s" % (m["epoch"], k, m[k],
                                                           ref[m["epoch"]][k]))
        done = lines[-1]
        with open(os.path.join(art, "metrics.jsonl")) as f:
            final = [json.loads(x) for x in f if '"done"' in x][-1]
        assert final["test_accuracy"] == done["test_accuracy"], (final, done)
        now = servers(wa.proc.pid)
        assert now == resumed, "the second trial did not run on the resident trainer: %s, %s" % (
            now, resumed)
        print("resumed at epoch %d on resident trainer %d; metrics equal an uninterrupted run" %
              (after[0], now[0]))
        wa.stop()
        rc = ctl.stop()
        assert rc == 0, "controller exit %d at SIGTERM:\n%s" % (rc, ctl.tail())
        ok = True
    finally:
        wa.stop()
        if ctl.proc and ctl.proc.poll() is None:
            ctl.proc.kill()
        if not ok:
            print("---- controller log\n" + ctl.tail(6000))
            print("---- worker log\n%s" % wa.text()[-4000:])
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept " + root)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
