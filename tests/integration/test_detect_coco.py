"""COCO detection datasets end to end (issue 30), through the hone CLI against a real controller
and a real worker on loopback: gen_detect.py's tiny set written as KITTI and, the same images and
boxes, as COCO in COCO's own layout (annotations/instances_{train,val}2017.json, train2017/,
val2017/; gen_detect.to_coco). Both are registered as object_detection datasets (the KITTI one
with the class map sorted(CLASSES), the order COCO's categories take by id) and converted by the
worker (hone-pack --kitti, --coco) at 128x128: the two packed files are byte for byte the same
(same images, same boxes, same classes, same splits: the val file is the val split). Then a
detectnet_v2 experiment on the COCO dataset trains on the CPU for a few epochs, reporting val_map
each epoch, and reaches a val mAP well above an untrained network's (0.0000 on this set,
train/detect_train_test.c; 0.073 here at 12 epochs, the bar 0.02).

usage: test_detect_coco.py PYTHON-WITH-PILLOW HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
       HONE-PACK
Exits 77 when the generator has no Fashion-MNIST or photographs (HONE_REQUIRE_PHOTOS=1: fails)."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
import gen_detect  # noqa: E402  (to_coco and CLASSES: stdlib only)

GEN = os.path.join(HERE, "..", "data", "gen_detect.py")
SPEC = ["model.width=16", "train.batch_size=16", "train.optimizer=adamw", "train.lr=0.008",
        "train.weight_decay=0.0001", "train.epochs=12"]


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def convert(bins, ctl, ds):
    """The dataset packed at 128x128 by the worker: the packed file's path."""
    job = json.loads(hone(bins, ctl, "dataset", "convert", ds, "--size", "128", "--rgb",
                          "--json").stdout)
    deadline = time.time() + 300
    while time.time() < deadline:
        st = json.loads(hone(bins, ctl, "job", "status", job["id"], "--json").stdout)
        if st["status"] in ("done", "failed", "canceled"):
            break
        time.sleep(0.5)
    assert st["status"] == "done", st
    return job["config"]["out"]


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    py = sys.argv[1]
    bins = dict(zip(("hone", "ctl", "worker", "train", "pack"),
                    (os.path.abspath(a) for a in sys.argv[2:])))
    root = tempfile.mkdtemp(prefix="hone-detect-coco-")
    kitti, coco = os.path.join(root, "data", "kitti"), os.path.join(root, "data", "coco")
    g = subprocess.run([py, GEN, "--tiny", kitti], capture_output=True, text=True)
    if g.returncode != 0:
        if os.environ.get("HONE_REQUIRE_PHOTOS") == "1":
            raise AssertionError("gen_detect.py failed:\n" + g.stderr)
        print("skipped: gen_detect.py could not write the set:\n" + g.stderr)
        return 77
    n = gen_detect.to_coco(kitti, coco, "instances")
    assert n == {"train": 300, "val": 30}, n
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base).start()
    try:
        args = ["dataset", "create", "--type", "object_detection", "--json"]
        kd = json.loads(hone(bins, ctl, *args, "--name", "k", "--path", kitti, "--format",
                             "kitti").stdout)
        cd = json.loads(hone(bins, ctl, *args, "--name", "c", "--path", coco, "--format",
                             "coco").stdout)
        st = cd["stats"]
        # training holds a tenth of train/ out as its test split (no test/ folder): counted so
        assert st["train_images"] == 270 and st["test_from_train"] == 30, st
        assert st["test_images"] == 30 and st["val_images"] == 30, st
        assert st["class_names"] == sorted(gen_detect.CLASSES), st
        assert st["category_ids"] == [c["id"] for c in gen_detect.coco_categories()], st
        assert st["boxes"] == kd["stats"]["boxes"] and st["crowd_boxes"] == 0, (st, kd)
        # the KITTI set with the class map COCO's categories give: the same packed file
        api_body = {"name": "k2", "type": "object_detection", "format": "kitti", "path": kitti,
                    "classes": sorted(gen_detect.CLASSES)}
        req = urllib.request.Request(ctl.base + "/api/v1/datasets",
                                     data=json.dumps(api_body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            kd2 = json.loads(r.read())
        kpack, cpack = convert(bins, ctl, kd2["id"]), convert(bins, ctl, cd["id"])
        v = subprocess.run([bins["pack"], "--verify", cpack], capture_output=True, text=True)
        assert v.returncode == 0 and "train 300, val 30, test 0" in v.stdout, v.stdout
        with open(kpack, "rb") as a, open(cpack, "rb") as b:
            ka, cb = a.read(), b.read()
        # the same file but for the COCO set's category ids at the end (data/data.h: their
        # offset at byte 120, so the payload size and both checksums at 80..96 differ too)
        hb = struct.unpack_from("<I", ka, 12)[0]
        cat_off = struct.unpack_from("<Q", cb, 120)[0]
        assert struct.unpack_from("<Q", ka, 120)[0] == 0 and cat_off == (len(ka) + 63) // 64 * 64
        assert ka[:80] + ka[96:120] + ka[128:] == cb[:80] + cb[96:120] + cb[128:len(ka)], \
            "the KITTI and COCO sets packed differently"
        ids = list(struct.unpack_from("<%dq" % len(gen_detect.CLASSES), cb, cat_off))
        assert ids == [c["id"] for c in gen_detect.coco_categories()] and \
            len(cb) == cat_off + 8 * len(ids), ids
        # detectnet_v2 on the COCO set: val_map each epoch, well above an untrained network
        args = ["experiment", "create", "--name", "det", "--network", "detectnet_v2",
                "--train-dataset", cd["id"], "--json"]
        for s in SPEC:
            args += ["--spec", s]
        exp = json.loads(hone(bins, ctl, *args).stdout)
        assert exp["metric"] == "val_map", exp
        job = json.loads(hone(bins, ctl, "train", "start", "--experiment", exp["id"],
                              "--json").stdout)
        jid = job["id"] if "id" in job else job["job"]["id"]
        deadline = time.time() + 900
        while time.time() < deadline:
            st = json.loads(hone(bins, ctl, "job", "status", jid, "--json").stdout)
            if st["status"] in ("done", "failed", "canceled"):
                break
            time.sleep(1)
        assert st["status"] == "done", st
        rows = json.loads(hone(bins, ctl, "job", "metrics", jid, "--json").stdout)["metrics"]
        maps = [r.get("val_map", r.get("data", {}).get("val_map")) for r in rows]
        assert len(maps) == 12 and all(isinstance(m, (int, float)) for m in maps), rows[:2]
        best = st["result"]["best_metric"]
        assert best == max(maps), (best, maps)
        assert best >= 0.02, "val_map %.4f: not clearly above an untrained network's 0" % best
        print("detect_coco: ok (same packed file as KITTI; val_map per epoch %s; best %.4f)" % (
            " ".join("%.3f" % m for m in maps), best))
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), open(w.log_path, errors="replace").read()[-4000:]))
        raise
    finally:
        w.stop()
        ctl.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
