#!/usr/bin/env python3
"""kill -9 a worker (and its trainer: the whole process group, as when a node dies) in the middle
of an AutoML trial, after epoch >= 2 was acknowledged. Its lease must expire and the trial must
resume on a second worker from its checkpoint (the first epoch that worker reports is the one
after the last acknowledged, never 1) and complete with every epoch stored exactly once.
--stall: first SIGSTOP the worker alone, let its trainer write the next epoch's checkpoint (that
epoch is then never reported), and only then kill the group: a node that hangs and dies between
checkpoint and report. The trial must still end with every epoch stored.
Usage: test_worker_kill.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN [--stall] [--keep]"""
import argparse
import os
import shutil
import signal
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
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--stall", action="store_true")
    a = ap.parse_args()
    fm = fmnist_dir()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    root = tempfile.mkdtemp(prefix="hone-crash-wrk-")
    ctl = Controller(a.controller, root, "log_format: text\nheartbeat_seconds: 1\n"
                     "lease_seconds: 4\ndata_roots: [\"%s\", \"%s\"]\n" % (root, fm))
    wa = Worker(a.worker, a.trainer, root, "a", ctl.base)
    wb = Worker(a.worker, a.trainer, root, "b", ctl.base)
    ok = False
    try:
        ctl.start()
        wa.start()
        ds = ctl.ok("POST", "/api/v1/datasets", {"name": "fm", "type": "image_classification",
                                                 "format": "idx", "path": fm})["id"]
        epochs = 8
        exp = ctl.ok("POST", "/api/v1/experiments", {
            "name": "wkill", "network_arch": "mlp", "train_datasets": [ds],
            "metric": "val_accuracy",
            "specs": {"data": {"train_limit": 30000, "val_size": 500},
                      "model": {"hidden": 64}, "train": {"epochs": epochs, "batch_size": 32}},
            "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                "automl_max_recommendations": 1, "automl_max_parallel": 1}})["id"]
        job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "automl"})["id"]
        acked = wait_for(lambda: [x for x in wa.acked() if x[1] >= 2], 120, 0.05,
                         "worker a to get epoch 2 acknowledged")
        trial = acked[0][0]
        if a.stall:
            ck = os.path.join(root, "data", "artifacts", trial, "checkpoint.bin")
            os.kill(wa.proc.pid, signal.SIGSTOP)
            m0 = os.stat(ck).st_mtime_ns
            wait_for(lambda: os.stat(ck).st_mtime_ns != m0, 60, 0.02,
                     "the stalled worker's trainer to write its next checkpoint")
            time.sleep(0.2)
        wa.kill9()
        last_a = max(e for j, e in wa.acked() if j == trial)
        print("killed worker a (and its trainer) after epoch %d of %s was acknowledged" % (
            last_a, trial))
        assert last_a < epochs, "the trial finished before the kill; make it longer"
        st = ctl.ok("GET", "/api/v1/jobs/%s" % trial)
        # --stall: the stopped worker's heartbeats stopped too, and an epoch on a loaded machine
        # may outlast the 4 s lease, which then lapses (the job queued again) before the kill
        assert st["status"] == "running" or (a.stall and st["status"] == "queued"), st
        wb.start()
        t0 = time.time()
        wait_for(lambda: ctl.ok("GET", "/api/v1/jobs/%s" % job)["status"] in
                 ("done", "failed", "canceled"), 180, 0.5, "the AutoML job to finish")
        print("job finished %.1f s after worker b started" % (time.time() - t0))
        js = ctl.ok("GET", "/api/v1/jobs/%s" % job)
        assert js["status"] == "done", js
        t = ctl.ok("GET", "/api/v1/jobs/%s" % trial)
        assert t["status"] in ("done", "stopped"), t
        assert t["epoch"] == epochs, "trial ended at epoch %d of %d" % (t["epoch"], epochs)
        b_epochs = [e for j, e in wb.acked() if j == trial]
        assert b_epochs, "worker b reported nothing for the trial:\n" + wb.text()
        assert b_epochs[0] > 1, "worker b restarted the trial from epoch 1: %s" % b_epochs
        assert b_epochs[0] <= last_a + 1, "worker b skipped epochs: %s after %d" % (b_epochs,
                                                                                  last_a)
        assert ", resumed" in wb.text(), "worker b's trainer was not started with resume"
        ms = [m["epoch"] for m in ctl.ok("GET", "/api/v1/jobs/%s/metrics" % trial)["metrics"]]
        assert ms == list(range(1, epochs + 1)), "stored epochs %s" % ms
        a_epochs = [e for j, e in wa.acked() if j == trial]
        assert set(a_epochs) | set(b_epochs) <= set(ms)
        print("worker a acknowledged epochs %s, worker b resumed at %d and reported %s; stored "
              "%s once each" % (a_epochs, b_epochs[0], b_epochs, ms))
        wb.stop()
        rc = ctl.stop()
        assert rc == 0, "controller exit %d at SIGTERM:\n%s" % (rc, ctl.tail())
        ok = True
    finally:
        for w in (wa, wb):
            w.stop()
        if ctl.proc and ctl.proc.poll() is None:
            ctl.proc.kill()
        if not ok:
            print("---- controller log\n" + ctl.tail(6000))
            for w in (wa, wb):
                print("---- %s log\n%s" % (w.name, w.text()[-3000:]))
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept " + root)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
