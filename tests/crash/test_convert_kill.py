"""kill -9 of a worker mid-convert (issue 8): a real controller (lease_seconds 3) and a real worker
packing a generated PNG folder big enough to take a few seconds on one thread; the worker (with
hone-pack, its process group) is killed at the convert job's first progress report. Nothing is
at the packed file's name then (hone-pack writes a temp file and renames it); the lease expires,
a second worker leases the job, packs again and completes it, and the file verifies
(`hone-pack --verify`) with every image. With `kitti` the folder is a KITTI set of the same PNGs
(tests/lib/pngfolder.py), packed by hone-pack --kitti, and the file verifies with every box too.

usage: test_convert_kill.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK [kitti]"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from crash_util import Controller, dump_logs, stop_all, wait_for  # noqa: E402
from honeproc import WorkerProcess  # noqa: E402
from pngfolder import write_folder, write_kitti  # noqa: E402


def main():
    if len(sys.argv) not in (5, 6) or sys.argv[5:] not in ([], ["kitti"]):
        print(__doc__)
        return 2
    kitti = sys.argv[5:] == ["kitti"]
    ctl_bin, wrk_bin, trn_bin, pack_bin = (os.path.abspath(a) for a in sys.argv[1:5])
    root = tempfile.mkdtemp(prefix="hone-convert-kill-")
    n, boxes = 3000, 0
    if kitti:
        boxes = write_kitti(os.path.join(root, "pngs"), images=n, size=256, classes=("x", "y"))
    else:
        n = write_folder(os.path.join(root, "pngs"), classes=4, per_class=750, size=256, rgb=True)
    c = Controller(ctl_bin, root, "lease_seconds: 3\ndata_roots: [\"%s\"]\n" % root)
    c.start()
    workers = []
    try:
        body = {"name": "pngs", "path": os.path.join(root, "pngs"), "format": "image_folder"}
        if kitti:
            body.update(type="object_detection", format="kitti", classes=["y", "x"])
        ds = c.ok("POST", "/api/v1/datasets", body)["id"]
        a = WorkerProcess(wrk_bin, trn_bin, root, "a", c.base, extra=["--packer", pack_bin])
        workers.append(a.start())
        job = c.ok("POST", "/api/v1/datasets/%s/convert" % ds, {"input_size": 32})
        out = job["config"]["out"]

        def first_report():
            j = c.ok("GET", "/api/v1/jobs/" + job["id"])
            return j if j["progress"] else None
        j = wait_for(first_report, 120, step=0.05, what="the first progress report")
        a.kill9()
        first = j["worker_id"]
        assert j["status"] == "running" and j["progress"]["images_done"] < n, j
        assert not os.path.exists(out), "a packed file is at its name before the pack ended"
        temps = [f for f in os.listdir(os.path.dirname(out)) if ".tmp-" in f]
        assert temps, "the killed packer left no temp file: this test no longer kills mid-pack"
        b = WorkerProcess(wrk_bin, trn_bin, root, "b", c.base, extra=["--packer", pack_bin])
        workers.append(b.start())

        def done():
            j = c.ok("GET", "/api/v1/jobs/" + job["id"])
            assert j["status"] in ("queued", "running", "done"), j
            return j if j["status"] == "done" else None
        j = wait_for(done, 240, what="the convert job to finish on the second worker")
        assert j["attempts"] == 0 and j["result"]["images"] == n, j
        wait_for(lambda: c.ok("GET", "/api/v1/workers"), 5)
        names = {w["id"]: w["name"] for w in c.ok("GET", "/api/v1/workers")["workers"]}
        assert names[first] == "a", names
        log_b = open(b.log_path).read()
        assert "job %s: convert done" % job["id"] in log_b
        assert "left by a packer that died" in log_b, "the dead packer's temp file was not swept"
        left = [f for f in os.listdir(os.path.dirname(out)) if f != os.path.basename(out)]
        assert not left, left
        p = subprocess.run([pack_bin, "--verify", out], capture_output=True, text=True)
        assert p.returncode == 0 and ("%d images 32x32x3" % n) in p.stdout, (p.stdout, p.stderr)
        if kitti:
            assert ("classes: y x\nboxes: %d\n" % boxes) in p.stdout, p.stdout
    except BaseException:
        dump_logs(c, workers, 3000)
        raise
    finally:
        stop_all(c, workers)
    print("convert kill%s: ok" % (" (kitti)" if kitti else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
