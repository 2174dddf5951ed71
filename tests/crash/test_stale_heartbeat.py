"""A heartbeat answered after its job ended must not stop the next job (found by a review, after
CI's release race): the worker's heartbeat thread copies the current job's id, and the controller
puts a job that is no longer running on that worker in the answer's `cancel` list. When the answer
came back after the job had ended and the next one had begun, the worker set its cancel flag, and
the flag stopped the new job (`stopped` after a few epochs, "job <old>: canceled by the
controller" in its log). Now the flag is set only while the named job is still the current one
(checked under the lock worker_set_job takes).

A real controller and a real worker; between them a loopback proxy (tests/lib/holdproxy.py) that
holds the heartbeat naming job 1 until the test lets it go:
  1. job 1 (mlp, 100000 epochs on a small generated PNG folder) runs; a heartbeat naming it is
     held; job 1 is canceled through the API (the worker learns it from its next report);
  2. job 2 (same set, 300 epochs) starts and reports its first epoch; only then the held heartbeat
     goes on, and its answer (cancel: job 1) comes back while job 2 runs;
  3. job 2 must end `done` at epoch 300, and the worker must not have taken the answer as a cancel;
  4. the controller's half of it: a heartbeat naming job 3 is held while job 3 is paused, job 4
     runs, and job 3 is resumed (queued); the heartbeat's late word must not re-attach job 3 to the
     busy worker (it did while only a `released` lease was final: the job then sat `running` on a
     worker that did not run it until its lease lapsed); job 3 runs again once job 4 is canceled.

usage: test_stale_heartbeat.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from crash_util import Controller, dump_logs, stop_all, wait_for  # noqa: E402
from holdproxy import HoldProxy  # noqa: E402
from honeproc import WorkerProcess  # noqa: E402
from pngfolder import write_folder  # noqa: E402

HOLD = 8.0  # under the worker's 10 s heartbeat timeout
EPOCHS2 = 300


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    ctl_bin, wrk_bin, trn_bin, pack_bin = (os.path.abspath(a) for a in sys.argv[1:])
    root = tempfile.mkdtemp(prefix="hone-stalehb-")
    pngs = os.path.join(root, "pngs")
    write_folder(pngs, classes=2, per_class=100, size=32, rgb=True)
    c = Controller(ctl_bin, root, "lease_seconds: 60\nheartbeat_seconds: 1\n"
                   "data_roots: [\"%s\"]\n" % root)
    c.start()
    proxy = HoldProxy(int(c.base.rsplit(":", 1)[1]), hold=HOLD)
    w = WorkerProcess(wrk_bin, trn_bin, root, "a", proxy.base, extra=["--packer", pack_bin])

    def job(jid):
        return c.ok("GET", "/api/v1/jobs/" + jid)

    def experiment(name, epochs):
        return c.ok("POST", "/api/v1/experiments",
                    {"name": name, "network_arch": "mlp", "train_datasets": [ds],
                     "specs": {"train": {"epochs": epochs, "batch_size": 64},
                               "data": {"val_size": 32}}})["id"]

    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "pngs", "path": pngs,
                                               "format": "image_folder"})["id"]
        e1, e2 = experiment("one", 100000), experiment("two", EPOCHS2)
        j1 = c.ok("POST", "/api/v1/experiments/%s/jobs" % e1, {"action": "train"})["id"]
        w.start()
        wait_for(lambda: job(j1)["epoch"] >= 1, 120, 0.05, what="job 1's first epoch")

        # 1. a heartbeat naming job 1 held; job 1 canceled
        proxy.arm(('"%s"' % j1).encode())
        if not proxy.held.wait(30):
            raise AssertionError("no heartbeat naming job 1 reached the proxy")
        c.ok("POST", "/api/v1/jobs/%s/cancel" % j1)
        wait_for(lambda: job(j1)["status"] not in ("queued", "running"), 60, 0.05,
                 what="job 1 to end")

        # 2. job 2 runs; then the held heartbeat's answer comes back
        j2 = c.ok("POST", "/api/v1/experiments/%s/jobs" % e2, {"action": "train"})["id"]
        wait_for(lambda: job(j2)["epoch"] >= 1, 60, 0.02, what="job 2's first epoch")
        assert proxy.holding() == 1, "the heartbeat was let go before job 2 ran: hold longer"
        proxy.let_go()
        wait_for(lambda: proxy.holding() == 0, 30, 0.02, what="the held heartbeat to go on")

        # 3. job 2 ends as it should
        t = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            job(j2)), 240, what="job 2 to end")
        assert t["status"] == "done" and t["epoch"] == EPOCHS2, (t, w.text()[-3000:])
        assert "canceled by the controller" not in w.text(), w.text()[-3000:]

        # 4. the controller's half: a late heartbeat must not re-attach a job whose lease ended
        # otherwise than by lapsing. Job 3 is paused while a heartbeat naming it is held, job 4
        # keeps the worker busy, job 3 is resumed (queued), then the heartbeat goes on.
        j3 = c.ok("POST", "/api/v1/experiments/%s/jobs" % e1, {"action": "train"})["id"]
        wait_for(lambda: job(j3)["epoch"] >= 1, 60, 0.05, what="job 3's first epoch")
        proxy.arm(('"%s"' % j3).encode())
        if not proxy.held.wait(30):
            raise AssertionError("no heartbeat naming job 3 reached the proxy")
        c.ok("POST", "/api/v1/jobs/%s/pause" % j3)
        wait_for(lambda: job(j3)["status"] == "paused", 60, 0.05, what="job 3 to pause")
        j4 = c.ok("POST", "/api/v1/experiments/%s/jobs" % e1, {"action": "train"})["id"]
        wait_for(lambda: job(j4)["epoch"] >= 1, 60, 0.02, what="job 4's first epoch")
        c.ok("POST", "/api/v1/jobs/%s/resume" % j3)
        assert job(j3)["status"] == "queued", job(j3)
        assert proxy.holding() == 1, "the heartbeat was let go before job 3 was queued again"
        proxy.let_go()
        wait_for(lambda: proxy.holding() == 0, 30, 0.02, what="the held heartbeat to go on")
        time.sleep(0.5)
        t3, t4 = job(j3), job(j4)
        assert t4["status"] == "running", t4
        assert t3["status"] == "queued" and not t3["worker_id"], (
            "a late heartbeat re-attached the paused job", t3)
        c.ok("POST", "/api/v1/jobs/%s/cancel" % j4)
        e3 = t3["epoch"]
        wait_for(lambda: job(j3)["epoch"] > e3, 60, 0.05, what="job 3 to run again")
        c.ok("POST", "/api/v1/jobs/%s/cancel" % j3)
        wait_for(lambda: job(j3)["status"] not in ("queued", "running"), 60, 0.05,
                 what="job 3 to end")
    except BaseException:
        dump_logs(c, [w])
        raise
    finally:
        proxy.close()
        stop_all(c, [w])
    shutil.rmtree(root, ignore_errors=True)
    print("stale heartbeat: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
