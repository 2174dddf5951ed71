"""SIGTERM of a worker mid-convert and mid-inference (issue 10 follow-up): the worker stops its
child, removes its partial output and hands the lease back (`released`) within --grace, so the job
is queued again at once (lease_seconds is 60 here: nothing may wait for it to lapse) and the next
worker runs it from the start. A real controller, real workers, real hone-pack and hone-train on a
generated PNG folder big enough that packing (and labelling it) takes a few seconds on one thread.

  1. an image-folder train job creates its convert job; worker a packs it and gets SIGTERM at the
     first progress report: it exits within --grace, the convert job is queued at once (attempts
     0), nothing is at the packed file's name nor beside it (no temp file), and the train job
     waiting for it is still queued (not failed);
  2. worker b packs the folder (the file verifies with every image), then trains the job;
  3. an inference job on the folder: worker b gets SIGTERM once hone-train runs: it exits within
     --grace, the job is queued at once, no labels.jsonl (whole or temp) is in its folder; worker c
     labels every image.

`http` runs the workers with --storage http (the folder downloaded, the packed file and labels
uploaded); `shared` with the controller's disk.

usage: test_release.py shared|http HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from crash_util import (Controller, dump_logs, sigterm_within, stop_all,  # noqa: E402
                        wait_for)
from honeproc import WorkerProcess  # noqa: E402
from pngfolder import write_folder  # noqa: E402

GRACE = 5


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("shared", "http"):
        print(__doc__)
        return 2
    mode = sys.argv[1]
    ctl_bin, wrk_bin, trn_bin, pack_bin = (os.path.abspath(a) for a in sys.argv[2:])
    root = tempfile.mkdtemp(prefix="hone-release-%s-" % mode)
    pngs = os.path.join(root, "pngs")
    n = write_folder(pngs, classes=4, per_class=750, size=256, rgb=True)
    c = Controller(ctl_bin, root, "lease_seconds: 60\nheartbeat_seconds: 1\n"
                   "data_roots: [\"%s\"]\n" % root)
    c.start()
    extra = ["--packer", pack_bin, "--grace", str(GRACE)]
    if mode == "http":
        extra += ["--storage", "http"]
    workers = []

    def worker(name):
        w = WorkerProcess(wrk_bin, trn_bin, root, name, c.base, extra=extra)
        workers.append(w.start())
        return w

    def job(jid):
        return c.ok("GET", "/api/v1/jobs/" + jid)

    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "pngs", "path": pngs,
                                               "format": "image_folder"})["id"]
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                    "specs": {"train": {"epochs": 1, "batch_size": 64},
                              "data": {"val_size": 64}}})["id"]
        tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
        cid = tj["convert_job_id"]
        assert cid, tj
        out = job(cid)["config"]["out"]

        # 1. SIGTERM mid-convert
        a = worker("a")
        j = wait_for(lambda: (lambda j: j if j["progress"] else None)(job(cid)), 180, step=0.05,
                     what="the convert job's first progress report")
        assert j["status"] == "running" and j["progress"]["images_done"] < n, j
        t0 = time.time()
        sigterm_within(a, GRACE)
        j = job(cid)
        assert j["status"] == "queued" and not j["worker_id"] and j["attempts"] == 0, j
        assert time.time() - t0 < 30, "not queued at once"
        assert "job %s: shutting down; hone-pack was stopped" % cid in a.text(), a.text()[-3000:]
        assert not os.path.exists(out), "a packed file is at its name after the release"
        left = os.listdir(os.path.dirname(out)) if os.path.isdir(os.path.dirname(out)) else []
        assert not left, ("left beside the packed file", left)
        if mode == "http":
            mine = os.path.join(root, "w-a", "jobs", cid)
            left = os.listdir(mine) if os.path.isdir(mine) else []
            assert not left, ("left in worker a's job folder", left)
        t = job(tj["id"])
        assert t["status"] == "queued", t

        # 2. another worker packs from the start and trains
        b = worker("b")
        j = wait_for(lambda: (lambda j: j if j["status"] == "done" else None)(job(cid)), 240,
                     what="the convert job to finish on worker b")
        assert j["attempts"] == 0 and j["result"]["images"] == n, j
        assert "job %s: convert done" % cid in b.text()
        p = subprocess.run([pack_bin, "--verify", out], capture_output=True, text=True)
        assert p.returncode == 0 and ("%d images 32x32x3" % n) in p.stdout, (p.stdout, p.stderr)
        t = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            job(tj["id"])), 240, what="the train job")
        assert t["status"] == "done", t

        # 3. SIGTERM mid-inference
        inf = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp,
                   {"action": "inference", "parent_job_id": tj["id"], "folder": pngs})["id"]
        wait_for(lambda: ("job %s: %s inference on" % (inf, trn_bin)) in b.text(), 240,
                 step=0.05, what="hone-train --infer to start on worker b")
        art = os.path.join(root, "data", "artifacts", inf)
        if mode == "shared":  # labelling has begun (a loaded machine may take a while to exec)
            wait_for(lambda: os.path.exists(os.path.join(art, "labels.jsonl.tmp")), 60,
                     step=0.02, what="hone-train --infer to open labels.jsonl.tmp")
        else:
            time.sleep(0.5)
        t0 = time.time()
        sigterm_within(b, GRACE)
        j = job(inf)
        assert j["status"] == "queued" and not j["worker_id"] and j["attempts"] == 0, (
            j, b.text()[-3000:])
        assert time.time() - t0 < 30, "not queued at once"
        assert "job %s: shutting down; hone-train was stopped" % inf in b.text(), b.text()[-3000:]
        left = [f for f in (os.listdir(art) if os.path.isdir(art) else []) if "labels" in f]
        assert not left, ("left in the job's folder", left)
        if mode == "shared":
            assert "removed %s/labels.jsonl.tmp" % art in b.text(), b.text()[-3000:]

        cw = worker("c")
        j = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            job(inf)), 240, what="the inference job on worker c")
        assert j["status"] == "done" and j["result"]["images"] == n and j["attempts"] == 0, j
        assert "job %s: inference done" % inf in cw.text(), cw.text()[-3000:]
        labels = open(os.path.join(art, "labels.jsonl")).read().splitlines()
        assert len(labels) == n, len(labels)
    except BaseException:
        dump_logs(c, workers)
        raise
    finally:
        stop_all(c, workers)
    shutil.rmtree(root, ignore_errors=True)
    print("release %s: ok" % mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
