#!/usr/bin/env python3
"""kill -9 the controller at random moments (at least 5 times) during a small real AutoML run
(Fashion-MNIST subset, MLP, real hone-worker and hone-train), restarting it on the same data dir
and port each time. The run must complete, every trial must end, and every report a worker got a
200 for must be stored exactly once (metrics of each trial: epochs 1..n, no gaps, no repeats).
Usage: test_controller_kill.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN [--seed N] [--keep]"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crash_util import Controller, Worker, fmnist_dir, wait_for  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("controller")
    ap.add_argument("worker")
    ap.add_argument("trainer")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    fm = fmnist_dir()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    rnd = random.Random(a.seed)
    print("seed %d" % a.seed)
    root = tempfile.mkdtemp(prefix="hone-crash-ctl-")
    ctl = Controller(a.controller, root, "log_format: text\nheartbeat_seconds: 1\n"
                     "lease_seconds: 6\ndata_roots: [\"%s\", \"%s\"]\n" % (root, fm))
    workers = [Worker(a.worker, a.trainer, root, "w%d" % i, ctl.base) for i in (1, 2)]
    ok = False
    try:
        ctl.start()
        for w in workers:
            w.start()
        ds = ctl.ok("POST", "/api/v1/datasets", {"name": "fm", "type": "image_classification",
                                                 "format": "idx", "path": fm})["id"]
        exp = ctl.ok("POST", "/api/v1/experiments", {
            "name": "crash", "network_arch": "mlp", "train_datasets": [ds],
            "metric": "val_accuracy",
            "specs": {"data": {"train_limit": 2000, "val_size": 300},
                      "model": {"hidden": 32}, "train": {"epochs": 6, "batch_size": 64}},
            "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                "automl_max_recommendations": 12, "automl_max_parallel": 2,
                                "seed": a.seed % 1000}})["id"]
        job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "automl"})["id"]
        # Kill at random points of the run's progress (epochs stored), so the kills land inside
        # the run however fast or slow this machine is: 12 trials x 6 epochs = 72 epochs. The
        # trainers keep going while the controller is down, so one outage can pass several marks:
        # draw them from the first 60% so every kill still lands before the run ends.
        total = 12 * 6
        marks = sorted(rnd.sample(range(2, int(total * 0.6)), a.kills))
        print("kill -9 when these many epochs are stored: %s" % marks)
        kills = 0
        t0 = time.time()
        while True:
            st, js = ctl.req("GET", "/api/v1/jobs/%s" % job)
            assert st == 200, (st, js)
            if js["status"] in ("done", "failed", "canceled", "stopped"):
                break
            if time.time() - t0 > 240:
                raise AssertionError("AutoML job not finished after 240 s: %s" % js)
            done = (js.get("automl") or {}).get("epochs_done") or 0
            if kills < len(marks) and done >= marks[kills]:
                time.sleep(rnd.uniform(0.0, 0.3))
                ctl.kill9()
                kills += 1
                down = rnd.uniform(0.1, 2.0)
                print("kill -9 #%d at %.1f s (%d epochs stored), down %.1f s" % (
                    kills, time.time() - t0, done, down))
                sys.stdout.flush()
                time.sleep(down)
                ctl.start()
            else:
                time.sleep(0.05)
        print("job %s after %.1f s and %d kills" % (js["status"], time.time() - t0, kills))
        assert kills >= 5, "the run ended after only %d kills; make it longer" % kills
        assert js["status"] == "done", js
        au = js["automl"]
        trials = ctl.ok("GET", "/api/v1/jobs?parent=%s" % job)["jobs"]
        assert len(trials) == 12, "expected 12 trials, got %d" % len(trials)
        assert not au.get("trials_running"), (
            "AutoML job is %s while %d trial(s) still run (known controller bug: after a restart "
            "ctl_automl_step finishes the job as soon as the rebuilt search says DONE, before the "
            "last trial's complete arrived; controller/automl_step.c:249)" % (
                js["status"], au["trials_running"]))
        assert au["trials_done"] == 12, au
        for t in trials:
            assert t["status"] in ("done", "stopped"), "trial %s ended %s" % (t["id"], t["status"])
        stored = {}
        for t in trials:
            ms = ctl.ok("GET", "/api/v1/jobs/%s/metrics" % t["id"])["metrics"]
            epochs = [m["epoch"] for m in ms]
            assert epochs == list(range(1, len(epochs) + 1)), \
                "trial %s: stored epochs %s (gaps or repeats)" % (t["id"], epochs)
            assert len(epochs) == t["epoch"], (t["id"], epochs, t["epoch"])
            if t["status"] == "done":  # random search: every trial runs its whole budget
                assert t["epoch"] == t["epochs_target"] and epochs, \
                    "trial %s done at epoch %d of %d: %s" % (t["id"], t["epoch"],
                                                             t["epochs_target"], t)
            stored[t["id"]] = set(epochs)
        acked = [x for w in workers for x in w.acked()]
        missing = [(j, e) for j, e in acked if e not in stored.get(j, ())]
        assert not missing, "acknowledged reports missing from the store: %s" % missing
        print("%d trials, %d stored epochs, %d acknowledged reports (repeats included), "
              "all present once" % (len(trials), sum(len(v) for v in stored.values()),
                                    len(acked)))
        for w in workers:
            w.stop()
        rc = ctl.stop()
        assert rc == 0, "controller exit %d at SIGTERM:\n%s" % (rc, ctl.tail())
        ok = True
    finally:
        for w in workers:
            w.stop()
        if ctl.proc and ctl.proc.poll() is None:
            ctl.proc.kill()
        if not ok:
            print("---- controller log\n" + ctl.tail(6000))
            for w in workers:
                print("---- %s log\n%s" % (w.name, w.text()[-3000:]))
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept " + root)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
