#!/usr/bin/python3
"""Writes Fashion-MNIST as an RGB image folder at a larger size (Debian's python3-pil):
each 28x28 grey image is resized (bilinear) to SIZE x SIZE and coloured: background pixels take a
random colour, the garment a random tint, blended by the grey level; half the images are also
shifted by a few pixels. Colours and shifts come from a seeded RNG, so the folder is the same on
every run. Layout:
  ROOT/train/<class>/<index>.png   the first --train images of the training file
  ROOT/test/<class>/<index>.png    the first --test images of the t10k file
or, with --flat, ROOT/<class>/<index>.png holding the --train images only (hone-train then picks
its validation and test images from them). Class folders are named for the Fashion-MNIST classes.
Used by tests/train/test_train_folder.py; importable (write_rgb).
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist_folder  # noqa: E402


def colourise(im, size, rng):
    """The grey 28x28 PIL image im as an RGB size x size image, tinted and shifted by rng."""
    from PIL import Image
    bg = [rng.randint(0, 120) for _ in range(3)]
    tint = [rng.randint(100, 255) for _ in range(3)]
    dx, dy = (rng.randint(-size // 16, size // 16) for _ in range(2)) if rng.random() < 0.5 \
        else (0, 0)
    g = im.resize((size, size), Image.BILINEAR)
    if dx or dy:
        shifted = Image.new("L", (size, size), 0)
        shifted.paste(g, (dx, dy))
        g = shifted
    lut = [[bg[k] + (tint[k] - bg[k]) * v // 255 for v in range(256)] for k in range(3)]
    return Image.merge("RGB", [g.point(lut[k]) for k in range(3)])


def write_rgb(fm, root, size, ntrain, ntest, flat=False, seed=8):
    """Writes the folder; returns the number of images per split written."""
    from PIL import Image
    rng = random.Random(seed * 1000 + size)
    counts = {}
    splits = (("train", "train", ntrain),) if flat else (("train", "train", ntrain),
                                                          ("test", "t10k", ntest))
    for split, stem, n in splits:
        (total, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
        _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
        base = root if flat else os.path.join(root, split)
        for c in fmnist_folder.CLASSES:
            os.makedirs(os.path.join(base, c), exist_ok=True)
        for i in range(min(n, total)):
            im = Image.frombytes("L", (w, h), px[i * h * w:(i + 1) * h * w])
            out = colourise(im, size, rng)
            out.save(os.path.join(base, fmnist_folder.CLASSES[labels[i]], "%05d.png" % i))
        counts[split] = min(n, total)
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--test", type=int, default=500)
    ap.add_argument("--flat", action="store_true")
    a = ap.parse_args()
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("no Fashion-MNIST (apt-get install dataset-fashion-mnist)", file=sys.stderr)
        return 77
    c = write_rgb(fm, a.root, a.size, a.train, a.test, a.flat)
    print("wrote %s" % ", ".join("%d %s" % (v, k) for k, v in c.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
