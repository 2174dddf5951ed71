#!/usr/bin/python3
"""hone-train --export: trained models as ONNX, run in onnxruntime against hone-train's own outputs.
Trains (CPU, a few hundred images, one epoch) an mlp with batch norm and dropout and a cnn with
batch norm on Fashion-MNIST's IDX files, a resnet18 (width 8) on 32x32 RGB PNGs (the small-image
stem) and one on 72x72 RGB PNGs (the ImageNet stem: 7x7/2 conv, padded 3x3/2 max-pool); exports
each; checks the file with onnx.checker (full check, shape inference), then feeds onnxruntime the
same pixels (float32 NCHW, 0..255) that --infer reads from PNGs and compares, image by image, the
argmax of the ONNX logits with --infer's class and the softmax probability of that class with
--infer's score: |p_onnx - score| <= 1e-5 (both are float32 computations of the same graph, in
other orders). The models are trained one epoch only so that the scores are not all 1.0.
Also: the metadata (class names), and --export refusals (no model, unwritable path).
With DEBIAN_PYTHON and GEN_DETECT_PY: a detectnet_v2 trained one epoch on gen_detect.py's tiny KITTI
set (NMS postprocessing), exported with its "coverage" and "bbox" outputs; those outputs, decoded
and NMS'd in numpy as hone-train does (the decoding read from the model's "detect" metadata), must
give --infer's boxes on the val images: the same classes, scores within 1e-5, corners within
1e-3 px.
onnxruntime, onnx and numpy come from a venv under the build folder (ONNX_VENV) that sees the system's
packages and pip-installs what they lack; the test skips (77) when they cannot be had, or without
Fashion-MNIST. HONE_TEST_DEVICE=cuda trains, infers and exports on the GPU.
Usage: test_train_export.py HONE_TRAIN ONNX_VENV [DEBIAN_PYTHON GEN_DETECT_PY]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fmnist_folder  # noqa: E402
from pngfolder import png_bytes  # noqa: E402
import hone_train  # noqa: E402
from hone_train import check, failures, sets  # noqa: E402

TRAIN, VENV = sys.argv[1], sys.argv[2]
DETECT_ARGS = sys.argv[3:5] if len(sys.argv) >= 5 else None  # Debian's python3, gen_detect.py
DEVICE = os.environ.get("HONE_TEST_DEVICE", "cpu")  # a GPU machine: cuda (train, infer, export)
TOL = 1e-5


def run(args, want_ok=True):
    """hone-train ARGS on DEVICE; returns (JSON lines of stdout, stderr)."""
    return hone_train.run(TRAIN, DEVICE, args, want_ok)


def venv_python():
    """The venv's python with onnxruntime, onnx and numpy, creating it when needed; None if pip
    cannot install them."""
    here = [sys.executable, "-c", "import onnxruntime, onnx, numpy"]
    if subprocess.run(here, capture_output=True).returncode == 0:
        return sys.executable  # this python has them (the GPU image)
    py = os.path.join(VENV, "bin", "python")
    probe = [py, "-c", "import onnxruntime, onnx, numpy"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    # system site packages: a machine that has them already (the GPU image) needs no network
    if not os.path.exists(py) and subprocess.run([sys.executable, "-m", "venv",
                                                  "--system-site-packages", VENV]).returncode:
        return None
    p = subprocess.run([py, "-m", "pip", "install", "-q", "onnxruntime", "onnx", "numpy"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return None
    return py if subprocess.run(probe, capture_output=True).returncode == 0 else None


def write_png(path, w, h, ch, px):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = [bytes(px[y * w * ch:(y + 1) * w * ch]) for y in range(h)]
    with open(path, "wb") as f:
        f.write(png_bytes(w, h, rows, ch == 3))


def rgb_folder(root, size, per_class, seed):
    """3 classes of RGB patterns (each class its own hue and stripes, noise on top); returns
    {relative path: HWC bytes}."""
    import random
    rnd = random.Random(seed)
    out = {}
    for c in range(3):
        for i in range(per_class):
            px = bytearray(size * size * 3)
            for y in range(size):
                for x in range(size):
                    for k in range(3):
                        v = (((x + 2 * y) * (c + 1) + 40 * k * (k == c)) % 160 +
                             rnd.randrange(96)) % 256
                        px[(y * size + x) * 3 + k] = v
            rel = "class%d/%03d.png" % (c, i)
            write_png(os.path.join(root, rel), size, size, 3, px)
            out[rel] = bytes(px)
    return out


# runs in the venv: the checker, then logits for each image, compared with --infer's lines
COMPARE = r"""
import json, sys
import numpy as np, onnx, onnxruntime as ort
path, c, h, w, tol = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
req = json.load(sys.stdin)
m = onnx.load(path)
onnx.checker.check_model(m, full_check=True)
meta = {p.key: p.value for p in m.metadata_props}
s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.frombuffer(bytes.fromhex(req["pixels"]), dtype=np.uint8).reshape(-1, h, w, c)
x = x.transpose(0, 3, 1, 2).astype(np.float32)
logits = s.run(["logits"], {"pixels": x})[0]
z = logits.astype(np.float64)
p = np.exp(z - z.max(axis=1, keepdims=True))
p /= p.sum(axis=1, keepdims=True)
out = {"ir": m.ir_version, "opset": [o.version for o in m.opset_import if o.domain == ""],
       "ops": sorted({n.op_type for n in m.graph.node}), "meta": meta,
       "input": [d.dim_param or d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim],
       "argmax": p.argmax(axis=1).tolist(), "probs": p.tolist()}
json.dump(out, sys.stdout)
"""


def compare(py, name, model, onnx_path, c, h, w, images, labels, want_ops):
    """images: [(relative path, HWC bytes)] in --infer's order; labels: --infer's lines."""
    check(len(labels) == len(images), "%s: infer gave %d lines for %d images"
          % (name, len(labels), len(images)))
    if len(labels) != len(images):
        return
    check([l["file"] for l in labels] == [r for r, _ in images], "%s: infer's files" % name)
    req = {"pixels": b"".join(px for _, px in images).hex()}
    p = subprocess.run([py, "-c", COMPARE, onnx_path, str(c), str(h), str(w), str(TOL)],
                       input=json.dumps(req), capture_output=True, text=True)
    check(p.returncode == 0, "%s: onnx checker / onnxruntime: %s" % (name, p.stderr[-3000:]))
    if p.returncode != 0:
        return
    r = json.loads(p.stdout)
    check(r["ir"] == 8 and r["opset"] == [17], "%s: ir %s opset %s" % (name, r["ir"], r["opset"]))
    check(r["input"] == ["N", c, h, w], "%s: input shape %s" % (name, r["input"]))
    for op in want_ops:
        check(op in r["ops"], "%s: no %s node in %s" % (name, op, r["ops"]))
    check("Dropout" not in r["ops"], "%s: a Dropout node" % name)
    with open(os.path.join(model, "model.json")) as f:
        mj = json.load(f)
    check(json.loads(r["meta"].get("class_names", "null")) == mj["class_names"],
          "%s: metadata class_names %s" % (name, r["meta"].get("class_names")))
    worst, same, below = 0.0, 0, 0
    for i, l in enumerate(labels):
        pr = r["probs"][i][l["class_index"]]
        worst = max(worst, abs(pr - l["score"]))
        same += r["argmax"][i] == l["class_index"]
        below += l["score"] < 0.99
    print("%s: %d images, classes agree on %d, max |p_onnx - score| %.3g, %d scores < 0.99"
          % (name, len(labels), same, worst, below))
    check(worst <= TOL, "%s: probabilities differ by %.3g > %g" % (name, worst, TOL))
    # a tie broken the other way is the only excuse for another class, and it shows as a score
    # below 0.5; with scores within TOL that cannot happen here, so all must agree
    check(same == len(labels), "%s: argmax differs on %d images" % (name, len(labels) - same))
    check(below > 0, "%s: every score is >= 0.99: the comparison would say little" % name)


# runs in the venv: the checker, then the detector's two outputs decoded and NMS'd as hone-train
# does (detect.h: hone_det_decode, hone_det_nms; --infer then clips to the image), per image
DETECT = r"""
import json, sys
import numpy as np, onnx, onnxruntime as ort
path, c, h, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
req = json.load(sys.stdin)
m = onnx.load(path)
onnx.checker.check_model(m, full_check=True)
meta = {p.key: p.value for p in m.metadata_props}
d = json.loads(meta["detect"])
s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.frombuffer(bytes.fromhex(req["pixels"]), dtype=np.uint8).reshape(-1, h, w, c)
x = x.transpose(0, 3, 1, 2).astype(np.float32)
cov, bbox = s.run(["coverage", "bbox"], {"pixels": x})
k = cov.shape[1]
def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0]); ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0: return 0.0
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
    return iw * ih / u if u > 0 else 0.0
images = []
for i in range(x.shape[0]):
    cand = []
    for cl in range(k):
        ys, xs = np.nonzero(cov[i, cl] >= np.float32(d["cov_threshold"]))
        for gy, gx in zip(ys.tolist(), xs.tolist()):
            px = np.float32(gx * d["stride"] + d["offset"]); py = np.float32(gy * d["stride"] + d["offset"])
            n = np.float32(d["bbox_norm"])
            o = bbox[i, 4 * cl:4 * cl + 4, gy, gx]
            b = [float(px - o[0] * n), float(py - o[1] * n), float(px + o[2] * n), float(py + o[3] * n)]
            if b[2] > b[0] and b[3] > b[1]:
                cand.append((float(cov[i, cl, gy, gx]), cl, b))
    cand.sort(key=lambda t: -t[0])  # stable: ties keep the decode order
    kept = []
    for sc, cl, b in cand:
        if all(kc != cl or iou(kb, b) <= d["nms_iou"] for _, kc, kb in kept):
            kept.append((sc, cl, b))
    out = []
    for sc, cl, b in kept:
        b = [min(max(b[0], 0), w), min(max(b[1], 0), h), min(max(b[2], 0), w), min(max(b[3], 0), h)]
        if b[2] > b[0] and b[3] > b[1]:
            out.append({"class_index": cl, "score": sc, "x1": b[0], "y1": b[1], "x2": b[2], "y2": b[3]})
    images.append(out)
json.dump({"outputs": [o.name for o in m.graph.output],
           "shapes": [[dd.dim_param or dd.dim_value for dd in o.type.tensor_type.shape.dim] for o in m.graph.output],
           "ops": sorted({n.op_type for n in m.graph.node}), "images": images,
           "cov_range": [float(cov.min()), float(cov.max())]}, sys.stdout)
"""


def compare_detect(py, name, onnx_path, size, images, labels, classes, grid):
    """images: [(relative path, HWC bytes)] in --infer's order; labels: --infer's lines. Every
    image's boxes from the ONNX outputs must be --infer's: the same count, classes, scores within
    TOL and coordinates within 1e-3 px."""
    check([l["file"] for l in labels] == [r for r, _ in images], "%s: infer's files" % name)
    req = {"pixels": b"".join(px for _, px in images).hex()}
    p = subprocess.run([py, "-c", DETECT, onnx_path, "3", str(size), str(size)],
                       input=json.dumps(req), capture_output=True, text=True)
    check(p.returncode == 0, "%s: onnx checker / onnxruntime: %s" % (name, p.stderr[-3000:]))
    if p.returncode != 0:
        return
    r = json.loads(p.stdout)
    check(r["outputs"] == ["coverage", "bbox"], "%s: outputs %s" % (name, r["outputs"]))
    check(r["shapes"] == [["N", classes, grid, grid], ["N", 4 * classes, grid, grid]],
          "%s: output shapes %s" % (name, r["shapes"]))
    for op in ["Conv", "BatchNormalization", "Relu", "Add", "Slice", "Sigmoid"]:
        check(op in r["ops"], "%s: no %s node in %s" % (name, op, r["ops"]))
    boxes, worst, bad = 0, 0.0, 0
    for i, (l, got) in enumerate(zip(labels, r["images"])):
        want = list(l["boxes"])
        if len(want) != len(got):
            bad += 1
            print("%s: image %d: %d boxes from onnx, %d from --infer" % (name, i, len(got),
                                                                          len(want)))
            continue
        # each ONNX box matched to one --infer box (scores equal to float rounding may come in
        # either order, so the lists are matched, not zipped)
        used = [False] * len(want)
        for a in got:
            boxes += 1
            for j, b in enumerate(want):
                if not used[j] and a["class_index"] == b["class_index"] and \
                        abs(a["score"] - b["score"]) <= TOL and \
                        all(abs(a[key] - b[key]) <= 1e-3 for key in ["x1", "y1", "x2", "y2"]):
                    used[j] = True
                    worst = max(worst, abs(a["score"] - b["score"]))
                    break
            else:
                bad += 1
                print("%s: image %d: onnx %s has no match in --infer's" % (name, i, a))
    print("%s: %d images, %d boxes agree (max |score diff| %.3g), coverage %s"
          % (name, len(labels), boxes, worst, r["cov_range"]))
    check(bad == 0, "%s: %d images or boxes differ" % (name, bad))
    check(boxes > 0, "%s: no box to compare" % name)


def detector(py, tmp, debian_py, gen):
    """detectnet_v2 on gen_detect.py's tiny KITTI set (one epoch, NMS postprocessing): exported,
    and its outputs decoded as hone-train does equal --infer's boxes on the val images."""
    data = os.path.join(tmp, "det")
    if not os.path.exists(debian_py) or \
            subprocess.run([debian_py, gen, "--tiny", data], capture_output=True).returncode:
        print("detector: skipped (gen_detect.py could not write its set)")
        return
    spec = {"network": "detectnet_v2", "data.format": "kitti", "data.path": data,
            "model.width": 16, "model.input_size": 128, "train.batch_size": 16,
            "train.optimizer": "adamw", "train.lr": 0.008, "train.epochs": 1, "train.seed": 5,
            "detect.cluster": "nms"}
    model = os.path.join(tmp, "m_det")
    lines, err = run(sets(spec) + ["--out", model])
    if not (lines and lines[-1].get("event") == "done"):
        check(False, "detectnet_v2: training: %s" % err)
        return
    path = os.path.join(tmp, "det.onnx")
    if not export("detectnet_v2", model, path):
        return
    folder = os.path.join(data, "val", "images")
    labels, err = run(["--infer", model, folder])
    # the pixels, decoded by Debian's python3-pil (which gen_detect.py needs too)
    dec = ("import sys\nfrom PIL import Image\nfor p in sys.argv[1:]:\n"
           "    print(Image.open(p).convert('RGB').tobytes().hex())")
    p = subprocess.run([debian_py, "-c", dec] + [os.path.join(folder, l["file"]) for l in labels],
                       capture_output=True, text=True)
    check(p.returncode == 0, "decoding the val images: " + p.stderr[-2000:])
    pics = [(l["file"], bytes.fromhex(hx)) for l, hx in zip(labels, p.stdout.split())]
    with open(os.path.join(model, "model.json")) as f:
        classes = len(json.load(f)["class_names"])
    compare_detect(py, "detectnet_v2", path, 128, pics, labels, classes, 128 // 16)


def export(name, model, path):
    lines, err = run(["--export", model, path])
    ok = bool(lines) and lines[-1].get("event") == "export" and os.path.exists(path)
    check(ok, "%s: export: %s %s" % (name, lines, err))
    if ok:
        check(lines[-1]["bytes"] == os.path.getsize(path), "%s: bytes %s" % (name, lines[-1]))
    return ok


def main():
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    py = venv_python()
    if not py:
        print("SKIP: cannot pip-install onnxruntime, onnx and numpy into " + VENV)
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        # Fashion-MNIST test images as PNGs, and their pixels
        (n, h, w), px = fmnist_folder.read_idx(fm, "t10k-images-idx3-ubyte")
        imgs = os.path.join(tmp, "imgs")
        grey = []
        for i in range(120):
            rel = "%04d.png" % i
            img = px[i * h * w:(i + 1) * h * w]
            write_png(os.path.join(imgs, rel), w, h, 1, img)
            grey.append((rel, bytes(img)))
        idx = {"data.path": fm, "data.train_limit": 600, "data.val_size": 100,
               "data.test_limit": 100, "train.epochs": 1, "train.batch_size": 64,
               "train.seed": 5}
        nets = [("mlp", dict(idx, **{"network": "mlp", "model.hidden": 32, "model.batchnorm":
                                     "true", "model.dropout": 0.3, "train.lr": 0.02}),
                 ["Mul", "Sub", "Flatten", "Gemm", "BatchNormalization", "Relu"]),
                ("cnn", dict(idx, **{"network": "cnn", "model.hidden": 32, "model.batchnorm":
                                     "true", "model.dropout": 0.2, "train.lr": 0.02}),
                 ["Conv", "BatchNormalization", "MaxPool", "Relu", "Flatten", "Gemm"])]
        for name, spec, ops in nets:
            model = os.path.join(tmp, "m_" + name)
            lines, err = run(sets(spec) + ["--out", model])
            if not (lines and lines[-1].get("event") == "done"):
                check(False, "%s: training: %s" % (name, err))
                continue
            path = os.path.join(tmp, name + ".onnx")
            if export(name, model, path):
                labels, err = run(["--infer", model, imgs])
                compare(py, name, model, path, 1, h, w, grey, labels, ops)

        # resnet18 on RGB PNG folders: 32 px (small stem) and 72 px (ImageNet stem)
        for size in (32, 72):
            name = "resnet18-%d" % size
            data = os.path.join(tmp, "rgb%d" % size)
            rgb_folder(data, size, 24, seed=size)
            test = os.path.join(tmp, "rgb%d_infer" % size)
            pics = sorted(rgb_folder(test, size, 8, seed=size + 1).items())
            spec = {"network": "resnet18", "model.width": 8, "data.format": "image_folder",
                    "data.path": data, "data.val_size": 12, "model.input_size": size,
                    "train.epochs": 1, "train.batch_size": 16, "train.lr": 0.02,
                    "train.seed": 5}
            model = os.path.join(tmp, "m_" + name)
            lines, err = run(sets(spec) + ["--out", model])
            if not (lines and lines[-1].get("event") == "done"):
                check(False, "%s: training: %s" % (name, err))
                continue
            path = os.path.join(tmp, name + ".onnx")
            if export(name, model, path):
                labels, err = run(["--infer", model, test])
                compare(py, name, model, path, 3, size, size, pics, labels,
                        ["Conv", "BatchNormalization", "Relu", "Add", "GlobalAveragePool",
                         "Flatten", "Gemm"] + (["MaxPool"] if size > 64 else []))

        if DETECT_ARGS:
            detector(py, tmp, *DETECT_ARGS)

        # refusals: no model there, and a path that cannot be written
        _, err = run(["--export", os.path.join(tmp, "nothing"), os.path.join(tmp, "x.onnx")],
                     want_ok=False)
        check("nothing" in err, "export without a model: " + err)
        _, err = run(["--export", os.path.join(tmp, "m_mlp"), os.path.join(tmp, "no/dir/x.onnx")],
                     want_ok=False)
        check("x.onnx" in err, "export to a missing folder: " + err)
        check(not os.path.exists(os.path.join(tmp, "x.onnx")), "a file left behind")
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
