"""Object detection end to end (issue 12), through the hone CLI against a real controller and a
real worker on loopback: gen_detect.py's tiny KITTI set (Fashion-MNIST items on Debian's
photographs) registered as an object_detection dataset, a detectnet_v2 experiment (its metric
defaults to val_map), one train job run by hone-train on the CPU. The controller accepts the
detector's epoch reports (val_map), and the trained network's mAP is well above an untrained one's
(0.0000 on this set, train/detect_train_test.c; the bar below is the one that test asserts).
The metric a detector does not report (val_accuracy) is refused, naming `metric`. Then (issue 30)
the dataset's stats count the test images training takes from train/, the job's result carries
COCO's metrics, and evaluate, export (ONNX) and inference (COCO results JSON) jobs of the detector
finish through the CLI.

usage: test_detect.py PYTHON-WITH-PILLOW HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
Exits 77 when the generator has no Fashion-MNIST or photographs (HONE_REQUIRE_PHOTOS=1: fails)."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
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


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    py = sys.argv[1]
    bins = dict(zip(("hone", "ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[2:])))
    root = tempfile.mkdtemp(prefix="hone-detect-")
    data = os.path.join(root, "data", "kitti")
    g = subprocess.run([py, GEN, "--tiny", data], capture_output=True, text=True)
    if g.returncode != 0:
        if os.environ.get("HONE_REQUIRE_PHOTOS") == "1":
            raise AssertionError("gen_detect.py failed:\n" + g.stderr)
        print("skipped: gen_detect.py could not write the set:\n" + g.stderr)
        return 77
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base).start()
    try:
        ds = json.loads(hone(bins, ctl, "dataset", "create", "--name", "tiny", "--path", data,
                             "--type", "object_detection", "--format", "kitti",
                             "--json").stdout)
        assert ds["stats"]["boxes"] > 0, ds
        p = hone(bins, ctl, "experiment", "create", "--name", "wrong", "--network",
                 "detectnet_v2", "--train-dataset", ds["id"], "--metric", "val_accuracy",
                 check=False)
        assert p.returncode != 0 and "metric" in p.stderr, (p.stdout, p.stderr)
        args = ["experiment", "create", "--name", "det", "--network", "detectnet_v2",
                "--train-dataset", ds["id"], "--json"]
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
        assert best >= 0.012, "val_map %.4f: not clearly above an untrained network's 0" % best
        # detection through every surface (issue 30): the dataset counts the 30 test images
        # training takes from train/, the job's result and an evaluate job carry COCO's metrics,
        # export gives an ONNX file, inference writes COCO results
        assert ds["stats"]["test_images"] == 30 and ds["stats"]["test_from_train"] == 30, ds
        assert ds["stats"]["train_images"] == 270, ds["stats"]
        res = st["result"]
        coco = ["test_coco_ap", "test_coco_ap50", "test_coco_ap75", "test_coco_ap_small",
                "test_coco_ap_medium", "test_coco_ap_large"]
        assert all(k in res for k in ["test_map"] + coco), res
        ev = json.loads(hone(bins, ctl, "job", "evaluate", jid, "--json").stdout)
        assert ev["status"] == "done" and ev["result"]["images"] == 30, ev
        assert abs(ev["result"]["coco_ap"] - res["test_coco_ap"]) <= 1e-5, (ev, res)
        onnx = os.path.join(root, "det.onnx")
        ex = json.loads(hone(bins, ctl, "job", "export", jid, "--out", onnx, "--json").stdout)
        assert ex["status"] == "done" and os.path.getsize(onnx) == ex["result"]["bytes"], ex
        inf = json.loads(hone(bins, ctl, "job", "infer", jid, os.path.join(data, "val", "images"),
                              "--json").stdout)
        assert inf["status"] == "done", inf
        assert inf["result"].get("coco_results") == "coco_results.json", inf
        print("detect: ok (val_map per epoch %s; best %.4f; test COCO AP %.4f, AP50 %.4f)" % (
            " ".join("%.3f" % m for m in maps), best, res["test_coco_ap"],
            res["test_coco_ap50"]))
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
