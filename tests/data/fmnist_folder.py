#!/usr/bin/python3
"""Writes Fashion-MNIST IDX images out as an image folder (Debian's python3-pil):
  ROOT/train/<class>/<index>.png   from the training file (index: 5 digits, its place in the file)
  ROOT/val/<class>/<index>.png     from the t10k file
--per-class N keeps the first N images of each class per split (0: all). --jpeg writes RGB JPEGs
instead (quality 90, each image tinted by a colour drawn from a seeded RNG, so the folder is the
same on every run). Class folders are named for the Fashion-MNIST classes.
Used by tests/data/test_data_files.py and bench/convert.sh; importable (write_folder, read_idx).
"""
import argparse
import gzip
import os
import random
import subprocess
import sys

CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle_boot"]


def find_fmnist():
    """$HONE_FMNIST_DIR, the Debian package, or the repo's .data (as tests/integration/lib.sh)."""
    d = os.environ.get("HONE_FMNIST_DIR")
    if not d:
        try:
            out = subprocess.run(["dpkg", "-L", "dataset-fashion-mnist"], capture_output=True,
                                 text=True).stdout
            hits = [l for l in out.splitlines() if "train-images-idx3" in l]
            d = os.path.dirname(hits[0]) if hits else None
        except OSError:
            d = None
    if not d:
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".data")
        d = repo if os.path.exists(os.path.join(repo, "train-images-idx3-ubyte.gz")) else None
    return d if d and os.path.isdir(d) else None


def read_idx(folder, stem):
    """(dims, bytes) of folder/stem or folder/stem.gz."""
    p = os.path.join(folder, stem)
    data = open(p, "rb").read() if os.path.exists(p) else gzip.open(p + ".gz", "rb").read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return dims, data[4 + 4 * nd:]


def write_folder(fm, root, per_class=0, jpeg=False, seed=1):
    """Writes the folder; returns {split: [(path, idx index, label)]} in the order written."""
    from PIL import Image
    rng = random.Random(seed)
    written = {}
    for split, stem in (("train", "train"), ("val", "t10k")):
        (n, h, w), px = read_idx(fm, stem + "-images-idx3-ubyte")
        _, labels = read_idx(fm, stem + "-labels-idx1-ubyte")
        counts = [0] * len(CLASSES)
        out = written.setdefault(split, [])
        for c in CLASSES:
            os.makedirs(os.path.join(root, split, c), exist_ok=True)
        for i in range(n):
            y = labels[i]
            if per_class and counts[y] >= per_class:
                continue
            counts[y] += 1
            im = Image.frombytes("L", (w, h), px[i * h * w:(i + 1) * h * w])
            if jpeg:
                tint = [rng.randint(64, 255) for _ in range(3)]
                bg = [rng.randint(0, 96) for _ in range(3)]
                g = im.tobytes()
                rgb = bytearray()
                for v in g:
                    rgb += bytes((bg[k] + (tint[k] - bg[k]) * v // 255) for k in range(3))
                im = Image.frombytes("RGB", (w, h), bytes(rgb))
                path = os.path.join(root, split, CLASSES[y], "%05d.jpg" % i)
                im.save(path, quality=90)
            else:
                path = os.path.join(root, split, CLASSES[y], "%05d.png" % i)
                im.save(path)
            out.append((path, i, y))
            if per_class and min(counts) >= per_class:
                break
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--per-class", type=int, default=0)
    ap.add_argument("--jpeg", action="store_true")
    a = ap.parse_args()
    fm = find_fmnist()
    if not fm:
        print("no Fashion-MNIST (apt-get install dataset-fashion-mnist)", file=sys.stderr)
        return 77
    w = write_folder(fm, a.root, a.per_class, a.jpeg)
    print("wrote %s" % ", ".join("%d %s" % (len(v), k) for k, v in w.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
