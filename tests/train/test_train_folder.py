#!/usr/bin/python3
"""hone-train on image folders, end to end through the CLI, on real Fashion-MNIST images:
1. PNG folder against IDX: the same 6000 training, 1000 validation and 2000 test images written
   as PNGs (train/, val/, test/) train the same mlp (same seed, 3 epochs) to the same accuracy
   within NOISE. The pixels, labels and normalisation are identical (a 28x28 grey PNG packs
   bit-exactly); what differs is the order hone-train sees the images in (the folder is sorted
   by class, then shuffled with the split seed), so the two runs differ as two shuffles of the
   same data do. Measured here: two IDX runs with different train.seed differ by about 0.5-1
   point of accuracy; NOISE = 0.03 is three times that, and a broken pipeline (wrong labels,
   channels or normalisation) misses it by tens of points.
2. The RGB variant (tests/data/fmnist_rgb.py) at 32x32, packed by hone-pack and trained through
   data.packed with every augmentation on: well above chance (10 classes: > 0.5).
3. The RGB variant at 64x64 as a flat folder (no splits: hone-train picks validation and 10%
   test images itself) packed by hone-train into a temp file: above chance (> 0.3), and nothing
   is left in its TMPDIR.
4. A packed file of the wrong size, or the wrong channels, is refused naming data.packed.
Usage: test_train_folder.py HONE_TRAIN HONE_PACK
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from PIL import Image
except ImportError:
    print("SKIP: no Pillow for this python (apt-get install python3-pil)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
import fmnist_folder  # noqa: E402
import fmnist_rgb  # noqa: E402

TRAIN, PACK = sys.argv[1], sys.argv[2]
NOISE = 0.03
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def hone_train(sets, tmpdir=None, want_ok=True):
    """Runs hone-train with --set KEY=VALUE for each pair; returns (epoch lines, done, stderr)."""
    args = [TRAIN, "--device", "cpu", "--threads", "2"]
    for k, v in sets.items():
        args += ["--set", "%s=%s" % (k, v)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if tmpdir:
        env["TMPDIR"] = tmpdir
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if (p.returncode == 0) != want_ok:
        check(False, "hone-train %s: exit %d: %s" % (sets, p.returncode, p.stderr.strip()))
        return [], {}, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    done = lines[-1] if lines and lines[-1].get("event") == "done" else {}
    return [l for l in lines if "epoch" in l], done, p.stderr


def write_png(px, h, w, label, path):
    im = Image.frombytes("L", (w, h), px)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    im.save(path)


def write_idx_as_folder(fm, root):
    """train/: training images 0..5999; val/: 59000..59999; test/: t10k 0..1999."""
    for split, stem, lo, hi in (("train", "train", 0, 6000), ("val", "train", 59000, 60000),
                                ("test", "t10k", 0, 2000)):
        (n, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
        _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
        for i in range(lo, min(hi, n)):
            write_png(px[i * h * w:(i + 1) * h * w], h, w, labels[i],
                      os.path.join(root, split, fmnist_folder.CLASSES[labels[i]], "%05d.png" % i))


MLP = {"network": "mlp", "model.hidden": 128, "train.epochs": 3, "train.batch_size": 64,
       "train.lr": 0.05, "train.seed": 1}


def main():
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        # 1. the PNG folder against the IDX files
        png = os.path.join(tmp, "png")
        write_idx_as_folder(fm, png)
        idx = dict(MLP, **{"data.path": fm, "data.train_limit": 6000, "data.val_size": 1000,
                           "data.test_limit": 2000})
        e_idx, d_idx, _ = hone_train(idx)
        e_idx2, d_idx2, _ = hone_train(dict(idx, **{"train.seed": 2}))
        folder = dict(MLP, **{"data.format": "image_folder", "data.path": png})
        e_png, d_png, err = hone_train(folder)
        check("packing 9000 images" in err, "hone-train did not say it packs: " + err)
        if d_idx and d_png and d_idx2:
            a, b, a2 = d_idx["test_accuracy"], d_png["test_accuracy"], d_idx2["test_accuracy"]
            va, vb = e_idx[-1]["val_accuracy"], e_png[-1]["val_accuracy"]
            print("IDX: test %.4f val %.4f; IDX seed 2: test %.4f; PNG folder: test %.4f val %.4f"
                  % (a, va, a2, b, vb))
            check(a > 0.75 and b > 0.75, "an mlp should reach 0.75 on Fashion-MNIST")
            check(abs(a - b) <= NOISE, "test accuracy: PNG %.4f vs IDX %.4f" % (b, a))
            check(abs(va - vb) <= NOISE, "val accuracy: PNG %.4f vs IDX %.4f" % (vb, va))

        # 2. RGB 32x32 through hone-pack and data.packed, every augmentation on
        rgb = os.path.join(tmp, "rgb32")
        fmnist_rgb.write_rgb(fm, rgb, 32, 3000, 500)
        packed = os.path.join(tmp, "rgb32.pack")
        p = subprocess.run([PACK, rgb, packed, "--size", "32x32", "--quiet"], capture_output=True,
                           text=True)
        check(p.returncode == 0, "hone-pack: " + p.stderr)
        private = os.path.join(tmp, "t2")
        os.mkdir(private)
        aug = {"augment.flip": "true", "augment.crop_padding": 2, "augment.jitter": 0.2,
               "augment.cutout": 6}
        sets = dict(MLP, **aug, **{"data.format": "image_folder", "data.path": rgb,
                                   "data.packed": packed, "data.val_size": 500})
        e, d, err = hone_train(sets, tmpdir=private)
        check("packing" not in err, "hone-train packed although data.packed was given")
        if d:
            print("RGB 32x32 packed, augmented: test %.4f val %.4f" % (
                d["test_accuracy"], e[-1]["val_accuracy"]))
            check(d["test_accuracy"] > 0.5, "RGB 32x32: test accuracy %.4f" % d["test_accuracy"])
        check(os.listdir(private) == [], "files left in TMPDIR: %s" % os.listdir(private))

        # 3. RGB 64x64 flat folder, packed by hone-train itself
        flat = os.path.join(tmp, "rgb64")
        fmnist_rgb.write_rgb(fm, flat, 64, 2000, 0, flat=True)
        private = os.path.join(tmp, "t3")
        os.mkdir(private)
        sets = dict(MLP, **{"data.format": "image_folder", "data.path": flat,
                            "model.input_size": 64, "data.val_size": 300})
        e, d, err = hone_train(sets, tmpdir=private)
        check("packing 2000 images" in err and "64x64, 3 channels" in err, "pack line: " + err)
        check("1500 train / 300 val / 200 test" in err, "flat folder split: " + err)
        if d:
            print("RGB 64x64 flat, self-packed: test %.4f val %.4f" % (
                d["test_accuracy"], e[-1]["val_accuracy"]))
            check(d["test_accuracy"] > 0.3, "RGB 64x64: test accuracy %.4f" % d["test_accuracy"])
        check(os.listdir(private) == [], "files left in TMPDIR: %s" % os.listdir(private))

        # 4. a packed file that is not what the spec asks for
        base = dict(MLP, **{"data.format": "image_folder", "data.path": rgb,
                            "data.packed": packed, "train.epochs": 1})
        for extra, what in (({"model.input_size": 64}, "size"), ({"data.channels": 1}, "channels")):
            _, _, err = hone_train(dict(base, **extra), want_ok=False)
            check("data.packed: " + packed in err and "32x32" in err,
                  "wrong %s: message %r" % (what, err.strip()))
        _, _, err = hone_train(dict(base, **{"data.packed": os.path.join(tmp, "none.pack")}),
                               want_ok=False)
        check("data.packed: " in err and "none.pack" in err, "missing pack: %r" % err.strip())
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("test_train_folder: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
