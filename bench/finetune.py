#!/usr/bin/env python3
"""Fine-tuning against training from scratch on a small set (issue 30), on the CPU, through the real
hone-train and its model.pretrained (what a fine-tuning job's worker passes).

The sets, image folders of Fashion-MNIST written here as grey PNGs (stdlib only), each with train/,
val/ (a tenth) and test/ (from the t10k file):
  big:   --big images of the 7 classes 3..9 (dress, coat, sandal, shirt, sneaker, bag, ankle boot)
         from the training file: the "larger related set" a user trained on before; 3500 test;
  small: --small images of the 3 classes 0..2 (T-shirt/top, trouser, pullover), others than the big
         set's, and a test/ part of 3000 t10k images of those classes (1000 each).
A cnn is trained on big (--parent-epochs), then on small for --epochs twice per seed: from random
weights, and from the big model (model.pretrained: every layer copied but the head, 7 classes
there and 3 here, which starts fresh). Same spec, same seed, same epochs. Prints one JSON line per
run and the mean test accuracy of each.

Both use train.lr 0.01 at batch 32 (the cnn's default 0.05 is for batch 128, and diverges here).

usage: bench/finetune.py HONE-TRAIN [--big 10000] [--small 600] [--epochs 5] [--parent-epochs 5]
                         [--seeds 1,2,3] [--threads 2] [--network cnn] [--lr 0.01]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import fmnist_folder  # noqa: E402
from pngfolder import png_bytes  # noqa: E402


def write(fm, root, stem, classes, n, skip=0, split="train"):
    """n images of the given classes (in file order, the first `skip` of them left out) as
    root/split/<class>/<index>.png; returns how many."""
    (total, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
    _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
    seen = done = 0
    for i in range(total):
        if labels[i] not in classes:
            continue
        seen += 1
        if seen <= skip:
            continue
        d = os.path.join(root, split, fmnist_folder.CLASSES[labels[i]])
        os.makedirs(d, exist_ok=True)
        img = px[i * h * w:(i + 1) * h * w]
        with open(os.path.join(d, "%05d.png" % i), "wb") as f:
            f.write(png_bytes(w, h, [img[r * w:(r + 1) * w] for r in range(h)], False))
        done += 1
        if done == n:
            break
    return done


def train(trainer, threads, sets, out):
    args = [trainer, "--device", "cpu", "--threads", str(threads), "--out", out]
    for s in sets:
        args += ["--set", s]
    t0 = time.time()
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("hone-train failed:\n" + p.stderr[-3000:])
    done = [json.loads(x) for x in p.stdout.splitlines() if x.startswith('{"event":"done"')]
    log = [x for x in p.stderr.splitlines() if "model.pretrained" in x]
    return done[-1], time.time() - t0, log


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("trainer")
    ap.add_argument("--big", type=int, default=10000)
    ap.add_argument("--small", type=int, default=600)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--parent-epochs", type=int, default=5)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--network", default="cnn")
    ap.add_argument("--lr", type=float, default=0.01)
    a = ap.parse_args()
    fm = fmnist_folder.find_fmnist()
    if not fm:
        sys.exit("no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
    tmp = tempfile.mkdtemp(prefix="hone-bench-finetune-")
    try:
        big, small = os.path.join(tmp, "big"), os.path.join(tmp, "small")
        # train/, val/ (a tenth, the images after train/'s) and test/ (t10k) of each set
        bclasses, sclasses = set(range(3, 10)), {0, 1, 2}
        nb = write(fm, big, "train", bclasses, a.big - a.big // 10)
        nb += write(fm, big, "train", bclasses, a.big // 10, skip=nb, split="val")
        write(fm, big, "t10k", bclasses, 3500, split="test")
        ns = write(fm, small, "train", sclasses, a.small - a.small // 10)
        ns += write(fm, small, "train", sclasses, a.small // 10, skip=ns, split="val")
        nt = write(fm, small, "t10k", sclasses, 3000, split="test")
        common = ["network=" + a.network, "data.format=image_folder", "data.channels=1",
                  "model.input_size=28", "train.batch_size=32", "train.lr=%g" % a.lr]
        parent = os.path.join(tmp, "parent")
        res, secs, _ = train(a.trainer, a.threads, common + [
            "data.path=" + big, "train.epochs=%d" % a.parent_epochs], parent)
        print(json.dumps({"run": "parent", "images": nb, "classes": 7,
                          "epochs": a.parent_epochs, "test_accuracy": res["test_accuracy"],
                          "seconds": round(secs, 1)}))
        small_sets = common + ["data.path=" + small, "train.epochs=%d" % a.epochs]
        accs = {"scratch": [], "finetuned": []}
        for seed in [int(s) for s in a.seeds.split(",")]:
            for how in ("scratch", "finetuned"):
                sets = small_sets + ["train.seed=%d" % seed]
                if how == "finetuned":
                    sets.append("model.pretrained=" + parent)
                out = os.path.join(tmp, "%s-%d" % (how, seed))
                res, secs, log = train(a.trainer, a.threads, sets, out)
                accs[how].append(res["test_accuracy"])
                row = {"run": how, "seed": seed, "train_images": ns - ns // 10,
                       "val_images": ns // 10,
                       "test_images": nt, "classes": 3, "epochs": a.epochs,
                       "test_accuracy": res["test_accuracy"],
                       "best_val_accuracy": res["best_val_accuracy"],
                       "seconds": round(secs, 1)}
                if log:
                    row["log"] = log
                print(json.dumps(row))
                shutil.rmtree(out, ignore_errors=True)
        print(json.dumps({"mean_test_accuracy": {k: round(sum(v) / len(v), 4)
                                                 for k, v in accs.items()},
                          "network": a.network, "epochs": a.epochs}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
