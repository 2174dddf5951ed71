"""SIGTERM while a report is in flight (CI's crash_release_shared once failed on it): a worker that
gets SIGTERM while its POST .../report waits for the controller cut that call short with its stop
flag, took the cut for an unreachable controller ("abandoned") and never handed the lease back,
so the job stayed `running` until its lease lapsed. Now the cut call is sent once more (with the
stopping timeout) and the lease is handed back (`released`) within --grace.

A real controller and real workers; between them a loopback proxy (tests/lib/holdproxy.py) that
holds the job's report requests 1 s each, so the report is in flight when SIGTERM comes:

  1. a convert job (hone-pack on a generated PNG folder): worker a gets SIGTERM while its first
     progress report is held; it exits within --grace and the job is queued at once (lease_seconds
     is 60: nothing may wait for it to lapse), attempts 0, no temp file beside the packed file;
  2. worker b packs it and trains the experiment's job (mlp, 30 epochs); it gets SIGTERM while
     the first epoch's report is held: the train job is queued at once too;
  3. worker c (no proxy) trains it to the end from the stored checkpoint.

usage: test_release_inflight.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from crash_util import (Controller, dump_logs, sigterm_within, stop_all,  # noqa: E402
                        wait_for)
from holdproxy import HoldProxy  # noqa: E402
from honeproc import WorkerProcess  # noqa: E402
from pngfolder import write_folder  # noqa: E402

GRACE = 5
HOLD = 1.0


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    ctl_bin, wrk_bin, trn_bin, pack_bin = (os.path.abspath(a) for a in sys.argv[1:])
    root = tempfile.mkdtemp(prefix="hone-inflight-")
    pngs = os.path.join(root, "pngs")
    n = write_folder(pngs, classes=4, per_class=750, size=256, rgb=True)
    c = Controller(ctl_bin, root, "lease_seconds: 60\nheartbeat_seconds: 1\n"
                   "data_roots: [\"%s\"]\n" % root)
    c.start()
    proxy = HoldProxy(int(c.base.rsplit(":", 1)[1]), hold=HOLD)
    workers = []

    def worker(name, url):
        w = WorkerProcess(wrk_bin, trn_bin, root, name, url,
                          extra=["--packer", pack_bin, "--grace", str(GRACE)])
        workers.append(w.start())
        return w

    def job(jid):
        return c.ok("GET", "/api/v1/jobs/" + jid)

    def sigterm_held(w, jid, what):
        """Waits for the proxy to hold the job's report, SIGTERMs w, and checks the lease came
        back within the grace: the job queued again, by nobody, attempts 0."""
        proxy.arm(("/api/v1/jobs/%s/report HTTP/1.1" % jid).encode())
        if not proxy.held.wait(240):
            raise AssertionError("no report of %s reached the proxy" % what)
        time.sleep(0.2)  # the call is in flight (held): the SIGTERM cuts it
        # the held call still waits; the one sent again goes straight on
        took = sigterm_within(w, GRACE, then=lambda: proxy.arm(None))
        j = job(jid)
        assert j["status"] == "queued" and not j["worker_id"] and j["attempts"] == 0, (
            "the %s was not handed back" % what, j, w.text()[-3000:])
        assert "%s: controller unreachable" % "/api/v1/jobs/%s/report" % jid not in w.text(), (
            "the cut report was taken for an unreachable controller", w.text()[-3000:])
        return took

    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "pngs", "path": pngs,
                                               "format": "image_folder"})["id"]
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                    "specs": {"train": {"epochs": 30, "batch_size": 64},
                              "data": {"val_size": 64}}})["id"]
        tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
        cid, tid = tj["convert_job_id"], tj["id"]
        assert cid, tj
        out = job(cid)["config"]["out"]

        # 1. mid-convert, the first progress report held
        a = worker("a", proxy.base)
        took = sigterm_held(a, cid, "convert job")
        assert "job %s: shutting down; hone-pack was stopped" % cid in a.text(), a.text()[-3000:]
        assert not os.path.exists(out), "a packed file is at its name after the release"
        left = os.listdir(os.path.dirname(out)) if os.path.isdir(os.path.dirname(out)) else []
        assert not left, ("left beside the packed file", left)
        assert job(tid)["status"] == "queued"
        print("convert: handed back %.1f s after SIGTERM, %d report(s) held" % (took, proxy.holds))

        # 2. worker b packs it, then trains; SIGTERM with the first epoch's report held
        b = worker("b", proxy.base)
        took = sigterm_held(b, tid, "train job")
        j = job(cid)
        assert j["status"] == "done" and j["result"]["images"] == n, j
        print("train: handed back %.1f s after SIGTERM" % took)

        # 3. worker c trains it to the end
        worker("c", c.base)
        t = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            job(tid)), 240, what="the train job on worker c")
        assert t["status"] == "done" and t["epoch"] == 30, t
    except BaseException:
        dump_logs(c, workers)
        raise
    finally:
        proxy.close()
        stop_all(c, workers)
    shutil.rmtree(root, ignore_errors=True)
    print("release inflight: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
