"""AutoML on a detector end to end (issue 12), through the hone CLI against a real controller and a
real worker on loopback: gen_detect.py's tiny KITTI set, a detectnet_v2 experiment at a small width
and input size (64), packed once by a convert job that every trial reuses.

  1. `hone experiment automl-defaults` lists detection-suited parameters in the default sweep
     (learning rate, weight decay, loss.bbox_weight, detect.cov_threshold, the clustering's eps,
     model.width) and no classifier-only ones; `--remove-param` picks from them, `--param` gives
     the whole space with other ranges (the trials sweep exactly those, inside the ranges given);
     both at once are refused (422 naming automl_remove_hyperparameters).
  2. a short bayesian AutoML job and a short hyperband one both end done; the status names
     `best_map` (TAO's name) equal to best_metric and above an untrained network's 0, the result's
     `best_test_map` the best trial's test_map, every trial
     waited for the one convert job of the set at that size, and `hone job evaluate` of the AutoML
     job (its best_model) gives a test mAP and per-class AP, the mAP equal to the best trial's
     test_map.
  3. `hone job infer --labels DIR` of the best model over the set's val images writes one KITTI
     label file an image (TAO's labels/), a line a box; `hone job infer` and `hone job evaluate`
     print a detector's tables (boxes per image; mAP and per-class AP).

usage: test_detect_automl.py PYTHON-WITH-PILLOW HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN HONE-PACK
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
SPEC = ["model.input_size=64", "model.width=8", "train.batch_size=16", "train.optimizer=adamw",
        "data.val_size=30"]
DETECT_KEYS = ("train.lr", "train.weight_decay", "loss.bbox_weight", "detect.cov_threshold",
               "detect.eps", "model.width")


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def hone_json(bins, ctl, *args):
    return json.loads(hone(bins, ctl, *(list(args) + ["--json"])).stdout)


def defaults(bins, ctl, exp):
    d = hone_json(bins, ctl, "experiment", "automl-defaults", exp)
    assert d["network_arch"] == "detectnet_v2", d
    names = list(d["default_hyperparameters"])
    for k in DETECT_KEYS:
        assert k in names, (k, names)
    for k in ("model.dropout", "model.hidden", "augment.flip", "train.optimizer"):
        assert k not in names, (k, names)
    for k in ("detect.cluster", "model.backbone"):  # may be picked, not swept by default
        assert k in d["all_hyperparameters"] and k not in names, (k, d)
    text = hone(bins, ctl, "experiment", "automl-defaults", exp).stdout
    assert "loss.bbox_weight" in text and "detect.cov_threshold" in text, text
    w = d["default_hyperparameters"]["model.width"]  # channels on the bf16 grid of 8
    assert w["step"] == 8 and w["min"] % 8 == 0 and w["max"] % 8 == 0, w
    assert [l for l in text.splitlines() if l.startswith("model.width")][0].find("step 8") > 0, text
    return names


# Picking: the default set less batch size, momentum (adamw) and width (the spec's 8).
PICK = ["--remove-param", "train.batch_size", "--remove-param", "train.momentum",
        "--remove-param", "model.width"]
PICKED = ("train.lr", "train.weight_decay", "loss.bbox_weight", "detect.cov_threshold",
          "detect.eps")  # at least these; the rest of the default set (augmentation strength) too
# Overriding: the whole space given, with narrower ranges.
OVERRIDE = {"train.lr": "float:0.003:0.02:log", "train.weight_decay": "float:1e-6:1e-3:log",
            "loss.bbox_weight": "float:2:20", "detect.cov_threshold": "float:0.01:0.2:log",
            "detect.eps": "float:0.1:0.6", "model.width": "int:8:12"}
OVERRIDE_ARGS = [a for k, v in OVERRIDE.items() for a in ("--param", "%s=%s" % (k, v))]


def in_range(cfg, k, spec):
    lo, hi = (float(x) for x in spec.split(":")[1:3])
    return lo <= cfg[k] <= hi


def search(bins, ctl, exp, cvt, algo, extra, swept):
    am = hone_json(bins, ctl, "automl", "start", "--experiment", exp, "--algorithm", algo,
                   "--max-parallel", "1", "--seed", "3", *extra)
    hone(bins, ctl, "job", "wait", am["id"], "--timeout", "500")
    st = hone_json(bins, ctl, "job", "status", am["id"])
    assert st["status"] == "done", st
    a = st["automl"]
    assert a["metric"] == "val_map" and a["maximize"], a
    assert "best_map" in a and a["best_map"] == a["best_metric"], a
    assert "best_val_accuracy" not in a, a
    assert isinstance(a["best_map"], float) and 0 <= a["best_map"] <= 1, a
    trials = hone_json(bins, ctl, "job", "list", "--parent", am["id"])
    trials = trials["jobs"] if isinstance(trials, dict) else trials
    assert len(trials) >= 3, trials
    for t in trials:
        assert t["convert_job_id"] == cvt, t
        cfg = t["config"]  # the trial's swept values
        assert sorted(cfg) == sorted(swept), (cfg, swept)
        for k in cfg:
            assert k not in OVERRIDE or swept != list(OVERRIDE) or in_range(cfg, k, OVERRIDE[k]), (
                k, cfg)
    best = hone_json(bins, ctl, "job", "status", a["best_job_id"])
    assert best["result"]["best_metric"] == a["best_map"], (best["result"], a)
    # the AutoML job's result names the best trial's test mAP beside best_metric
    assert st["result"]["best_test_map"] == best["result"]["test_map"], (st["result"], best)
    assert st["result"]["best_test_coco_ap"] == best["result"]["test_coco_ap"], (st["result"], best)
    ev = hone_json(bins, ctl, "job", "evaluate", am["id"], "--timeout", "240")
    assert ev["status"] == "done", ev
    got = ev["result"]["map"]  # the test part's mAP@0.5, as the trial's own last line said
    assert isinstance(got, float) and abs(got - best["result"]["test_map"]) < 1e-6, (
        ev["result"], best["result"])
    assert len(ev["result"]["ap"]) == len(ev["result"]["classes"]) == 10, ev["result"]
    # an untrained network scores 0.0000 here (train/detect_train_test.c); 2 CPU cores and
    # a minute leave these nets far from good, but above that
    assert a["best_map"] > 0, a
    print("%s: %d trial(s), best_map %.4f (trial %s), evaluate of best_model: test mAP %.4f"
          % (algo, len(trials), a["best_map"], a["best_trial"], got))
    return am["id"]


def infer(bins, ctl, am, data, root):
    folder = os.path.join(data, "val", "images")
    kdir = os.path.join(root, "kitti-labels")
    inf = hone_json(bins, ctl, "job", "infer", am, folder, "--timeout", "240", "--labels", kdir)
    assert inf["status"] == "done", inf
    images = sorted(os.listdir(folder))
    assert len(inf["labels"]) == len(images), len(inf["labels"])
    names = set(open(os.path.join(data, "classes.txt")).read().split())
    boxes = 0
    for r in inf["labels"]:
        kl = [x for x in r["kitti"].splitlines() if x]
        assert len(kl) == len(r["boxes"]), r
        for x in kl:
            f = x.split()
            assert len(f) == 16 and f[0] in names, x  # type, 14 KITTI fields, score
            assert 0 <= float(f[4]) <= float(f[6]) and 0 <= float(f[5]) <= float(f[7]), x
        # TAO's labels/ folder: one KITTI file an image, named by its stem, holding those lines
        stem = os.path.splitext(r["file"])[0]
        assert open(os.path.join(kdir, stem + ".txt")).read() == r["kitti"], r["file"]
        boxes += len(kl)
    assert sorted(os.listdir(kdir)) == sorted(os.path.splitext(i)[0] + ".txt" for i in images)
    # the tables a person reads: boxes per image; evaluate's mAP and per-class AP
    p = hone(bins, ctl, "job", "infer", am, folder, "--timeout", "240")
    assert "BOXES" in p.stdout and images[0] in p.stdout, p.stdout
    p = hone(bins, ctl, "job", "evaluate", am, "--timeout", "240")
    assert "mAP@0.5:" in p.stdout and "AP" in p.stdout and "accuracy" not in p.stdout, p.stdout
    print("infer: %d images, %d boxes as KITTI label files" % (len(images), boxes))


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    py = sys.argv[1]
    bins = dict(zip(("hone", "ctl", "worker", "train", "pack"),
                    (os.path.abspath(a) for a in sys.argv[2:])))
    root = tempfile.mkdtemp(prefix="hone-detect-automl-")
    data = os.path.join(root, "data", "kitti")
    g = subprocess.run([py, GEN, "--tiny", data], capture_output=True, text=True)
    if g.returncode != 0:
        if os.environ.get("HONE_REQUIRE_PHOTOS") == "1":
            raise AssertionError("gen_detect.py failed:\n" + g.stderr)
        print("skipped: gen_detect.py could not write the set:\n" + g.stderr)
        return 77
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base,
                      extra=["--packer", bins["pack"]]).start()
    t0 = time.time()
    try:
        ds = hone_json(bins, ctl, "dataset", "create", "--name", "tiny", "--path", data,
                       "--type", "object_detection", "--format", "kitti")
        args = ["experiment", "create", "--name", "det", "--network", "detectnet_v2",
                "--train-dataset", ds["id"]]
        for s in SPEC:
            args += ["--spec", s]
        exp = hone_json(bins, ctl, *args)["id"]
        names = defaults(bins, ctl, exp)
        p = hone(bins, ctl, "dataset", "convert", ds["id"], "--size", "64")  # waits
        assert "created convert job" in p.stdout, p.stdout
        cv = hone_json(bins, ctl, "job", "status", p.stdout.split("convert job ")[1].split()[0].rstrip(":"))
        assert cv["status"] == "done", cv
        # --param is the whole space: adding to or removing from the defaults beside it is refused
        p = hone(bins, ctl, "automl", "start", "--experiment", exp, *OVERRIDE_ARGS, *PICK[:2],
                 check=False)
        assert p.returncode != 0 and "automl_remove_hyperparameters" in p.stderr, (
            p.returncode, p.stderr)
        am = search(bins, ctl, exp, cv["id"], "bayesian",
                    ["--max-recommendations", "3", "--spec", "train.epochs=5"] + PICK,
                    [n for n in names if n not in PICK[1::2]])
        assert set(PICKED) <= set(names), (PICKED, names)
        search(bins, ctl, exp, cv["id"], "hyperband",
               ["--R", "2", "--nu", "2", "--epoch-multiplier", "3"] + OVERRIDE_ARGS,
               list(OVERRIDE))
        jobs = hone_json(bins, ctl, "job", "list")
        jobs = jobs["jobs"] if isinstance(jobs, dict) else jobs
        converts = [j for j in jobs if j["action"] == "convert"]
        assert len(converts) == 1, converts  # every trial reused the one convert job
        infer(bins, ctl, am, data, root)
        print("detect automl: ok in %.0f s" % (time.time() - t0))
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
