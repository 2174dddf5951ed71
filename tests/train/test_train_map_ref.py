#!/usr/bin/python3
"""hone_det_map (train/detect_map.c) against an independent PASCAL VOC AP implementation: the
`object-detection-metrics` package from PyPI (import name podm; Rafael Padilla's VOC metrics with
all-point interpolation, IoU >= 0.5, greedy matching by descending score, real-valued boxes as ours).
Random images (0 to 7 ground-truth boxes of 4 classes; predictions that are jittered copies, some of
the wrong class, duplicates and random boxes, random scores) over many seeds: every class's AP and
the mAP must agree to 1e-4. Scores are multiples of 2^-20 and coordinates of 1/4, exact in float32,
so both sides see the same numbers.
The package comes from pip (--no-deps: it only needs numpy and shapely at import; the rest of its
dependencies serve its plots and COCO tools) into a venv under the build folder. The test skips (77)
when pip cannot get them, unless HONE_REQUIRE_MAP_REF=1 (CI), when that is a failure.
Usage: test_train_map_ref.py DETECT_MAP_TOOL VENV
"""
import os
import random
import subprocess
import sys

TOOL, VENV = sys.argv[1], sys.argv[2]
TOL = 1e-4
N_CLASSES = 4
REQUIRE = os.environ.get("HONE_REQUIRE_MAP_REF") == "1"

PROBE = "import numpy, shapely; from podm.metrics import get_pascal_voc_metrics"


def unavailable(why):
    print("map_ref: " + why)
    sys.exit(1 if REQUIRE else 77)


def venv_python():
    """The venv's python with podm (object-detection-metrics), creating it when needed."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and subprocess.run([py, "-c", PROBE], capture_output=True).returncode == 0:
        return py
    if not os.path.exists(py) and subprocess.run([sys.executable, "-m", "venv", VENV]).returncode:
        return None
    steps = [["numpy", "shapely"], ["--no-deps", "object-detection-metrics==0.4.post1"]]
    for args in steps:
        p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + args,
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr[-2000:])
            return None
    return py if subprocess.run([py, "-c", PROBE], capture_output=True).returncode == 0 else None


def q(v, step=0.25):
    return round(v / step) * step


def random_set(seed):
    """[(gts, preds)] per image: gts [(cls, x1, y1, x2, y2)], preds [(cls, score, x1, y1, x2, y2)]."""
    rnd = random.Random(seed)
    images = []
    for _ in range(rnd.randint(1, 30)):
        gts, preds = [], []
        for _ in range(rnd.randint(0, 7)):
            w, h = rnd.uniform(8, 80), rnd.uniform(8, 80)
            x, y = rnd.uniform(0, 200), rnd.uniform(0, 200)
            gts.append((rnd.randrange(N_CLASSES), q(x), q(y), q(x + w), q(y + h)))
        for g in gts:
            for _ in range(rnd.choice([0, 1, 1, 1, 2, 3])):  # misses, hits, duplicates
                c = g[0] if rnd.random() < 0.85 else rnd.randrange(N_CLASSES)
                w, h = g[3] - g[1], g[4] - g[2]
                j = rnd.choice([0.05, 0.15, 0.3])
                x1 = q(g[1] + rnd.gauss(0, j * w))
                y1 = q(g[2] + rnd.gauss(0, j * h))
                x2 = max(x1 + 1, q(g[3] + rnd.gauss(0, j * w)))
                y2 = max(y1 + 1, q(g[4] + rnd.gauss(0, j * h)))
                preds.append((c, rnd.randint(1, 1 << 20) / (1 << 20), x1, y1, x2, y2))
        for _ in range(rnd.randint(0, 4)):  # false alarms
            x, y = rnd.uniform(0, 200), rnd.uniform(0, 200)
            preds.append((rnd.randrange(N_CLASSES), rnd.randint(1, 1 << 20) / (1 << 20),
                          q(x), q(y), q(x + rnd.uniform(4, 60)), q(y + rnd.uniform(4, 60))))
        rnd.shuffle(preds)
        images.append((gts, preds))
    return images


def ours(images):
    lines = ["classes %d" % N_CLASSES]
    for gts, preds in images:
        lines.append("image")
        lines += ["g %d %r %r %r %r" % g for g in gts]
        lines += ["p %d %r %r %r %r %r" % p for p in preds]
    p = subprocess.run([TOOL], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("detect_map_tool failed: " + p.stderr)
    ap, n_gt, mean = {}, {}, None
    for line in p.stdout.split("\n"):
        f = line.split()
        if f and f[0] == "ap":
            ap[int(f[1])], n_gt[int(f[1])] = float(f[2]), int(f[3])
        elif f and f[0] == "map":
            mean = float(f[1])
    return ap, n_gt, mean


REF_SCRIPT = r"""
import json, sys
from podm.metrics import BoundingBox, get_pascal_voc_metrics, MetricPerClass
out = []
for images in json.load(sys.stdin):
    gold, pred = [], []
    for i, (gts, preds) in enumerate(images):
        gold += [BoundingBox.of_bbox(i, c, x1, y1, x2, y2) for c, x1, y1, x2, y2 in gts]
        pred += [BoundingBox.of_bbox(i, c, x1, y1, x2, y2, s) for c, s, x1, y1, x2, y2 in preds]
    r = get_pascal_voc_metrics(gold, pred, 0.5)
    aps = {str(c): float(m.ap) for c, m in r.items() if m.num_groundtruth > 0}
    ngt = {str(c): int(m.num_groundtruth) for c, m in r.items()}
    mean = float(MetricPerClass.mAP(r)) if aps else 0.0
    out.append({"ap": aps, "ngt": ngt, "map": mean})
json.dump(out, sys.stdout)
"""


def main():
    import json
    py = venv_python()
    if py is None:
        unavailable("cannot pip install object-detection-metrics (numpy, shapely) into " + VENV)
    sets = [random_set(seed) for seed in range(60)]
    p = subprocess.run([py, "-c", REF_SCRIPT], input=json.dumps(sets), capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit("reference failed: " + p.stderr[-2000:])
    refs = json.loads(p.stdout)
    failures, compared, nontrivial = 0, 0, 0
    for seed, (images, ref) in enumerate(zip(sets, refs)):
        ap, n_gt, mean = ours(images)
        for c in range(N_CLASSES):
            want = ref["ap"].get(str(c))
            if n_gt[c] != ref["ngt"].get(str(c), 0):
                print("seed %d class %d: %d ground-truth boxes, reference %s"
                      % (seed, c, n_gt[c], ref["ngt"].get(str(c))))
                failures += 1
            if want is None:
                if ap[c] != -1:
                    print("seed %d class %d: AP %r without ground truth" % (seed, c, ap[c]))
                    failures += 1
                continue
            compared += 1
            nontrivial += 0.0 < want < 1.0
            if abs(ap[c] - want) > TOL:
                print("seed %d class %d: AP %.6f, reference %.6f" % (seed, c, ap[c], want))
                failures += 1
        if abs(mean - ref["map"]) > TOL:
            print("seed %d: mAP %.6f, reference %.6f" % (seed, mean, ref["map"]))
            failures += 1
    print("map_ref: %d class APs compared (%d strictly between 0 and 1), %d failures"
          % (compared, nontrivial, failures))
    if nontrivial < compared // 2:
        print("map_ref: too few non-trivial APs; the random sets test too little")
        failures += 1
    sys.exit(1 if failures else 0)


main()
