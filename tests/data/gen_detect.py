#!/usr/bin/python3
"""Writes a KITTI object-detection set: Fashion-MNIST items on real photographs (Debian's
python3-pil, no numpy). Each image is a SIZE x SIZE crop of a photograph (the skimage/sklearn
sample photos scripts/bootstrap.sh puts in .cache/photos) with 1 to 4 items pasted on it: a
Fashion-MNIST image scaled to 20..80 px (capped at half the image), at a random position, painted
as an opaque object (paste_item): a random colour shaded by the item's grey level, so the garment's
own texture stays, over a silhouette with a soft 1-2 px edge, the colour chosen to stand out from
the photograph under it. About a third of the images place an item overlapping another (box IoU
0.1..0.4). Labels are the tight boxes of the pasted items' pixels (grey level > 0 after scaling),
edges in pixel units, so x2 = last column + 1. (Until stop 14 an item was a flat tint blended by
its grey level: a dark garment was mostly transparent, and a tint close to the photograph's hid
it, so the set labelled items that could not be seen.) Image i
draws from random.Random(seed * 1000003 + i) alone, so every file is the same on every run and
one image can be rebuilt by itself (render()). Layout:
  ROOT/train/images/<i>.png  ROOT/train/labels/<i>.txt   (--count images)
  ROOT/val/images/...        ROOT/val/labels/...          (a tenth as many, from t10k)
  ROOT/classes.txt           the class names, one a line (the Fashion-MNIST classes)
--coco LAYOUT: the same set (the same images, the same boxes) written as COCO instead (to_coco):
  flat       ROOT/annotations.json, ROOT/images/<i>.png  (train/ only: one split)
  splits     ROOT/train/annotations.json, ROOT/train/images/..., ROOT/val/ the same
  instances  ROOT/annotations/instances_{train,val}2017.json, ROOT/{train,val}2017/<i>.png
  categories: every class, ids sparse (1, 3, 5, ...) in the order of their sorted names, so the
  dense classes (by id) are those a KITTI set's class map sorted(CLASSES) gives; image ids
  1000 + i (train) and 500000 + i (val), annotation ids numbered on across the files.
--tiny: 300 images at 128x128; the default: 5000 at 160x160.
--classify: instead, an image folder of single items in the same look (ROOT/train/<class>/,
ROOT/test/<class>/; --count, default 60000, at --size, default 72), to pretrain a backbone on.
Photographs: --photos, $HONE_PHOTOS_DIR, <repo>/.cache/photos (of this checkout or the main
one), or python3-skimage's data folder; none found is a clear error (exit 2).
"""
import argparse
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist_folder  # noqa: E402

CLASSES = [c.lower() for c in fmnist_folder.CLASSES]
MIN_SCALE, MAX_SCALE = 20, 80


def find_photos(given=None):
    """The photograph folder, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [given, os.environ.get("HONE_PHOTOS_DIR"),
             os.path.join(here, "..", "..", ".cache", "photos")]
    try:  # a worktree: the main checkout's cache
        common = subprocess.run(["git", "-C", here, "rev-parse", "--path-format=absolute",
                                 "--git-common-dir"], capture_output=True, text=True).stdout
        if common.strip():
            cands.append(os.path.join(os.path.dirname(common.strip()), ".cache", "photos"))
    except OSError:
        pass
    cands.append("/usr/lib/python3/dist-packages/skimage/data")
    for c in cands:
        if c and os.path.isdir(c) and load_photo_paths(c):
            return c
    return None


def load_photo_paths(folder):
    out = []
    for dp, _, fs in os.walk(folder):
        out += [os.path.join(dp, f) for f in fs if f.lower().endswith((".png", ".jpg", ".jpeg"))]
    return sorted(out)


def load_photos(folder, size):
    """RGB photographs at least size/2 a side (smaller ones are icons, not scenes)."""
    from PIL import Image
    photos = []
    for p in load_photo_paths(folder):
        try:
            im = Image.open(p)
            im.load()
        except Exception:  # noqa: BLE001 - a file Pillow cannot read is no background
            continue
        if min(im.size) >= max(64, size // 2):
            photos.append(im.convert("RGB"))
    return photos


def iou(a, b):
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def background(rng, photos, size):
    """A random square crop of one of the photographs, SIZE x SIZE, flipped half the time."""
    from PIL import Image
    photo = photos[rng.randrange(len(photos))]
    w, h = photo.size
    side = rng.randint(min(w, h) // 2, min(w, h))
    x0, y0 = rng.randint(0, w - side), rng.randint(0, h - side)
    img = photo.crop((x0, y0, x0 + side, y0 + side)).resize((size, size), Image.BILINEAR)
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    return img


N_TINTS, MIN_CONTRAST = 8, 60


def draw_tints(rng):
    """N_TINTS candidate colours for one item, always as many draws (the boxes of a draw=False
    render must not depend on what the pixels under an item are)."""
    return [tuple(rng.randint(0, 255) for _ in range(3)) for _ in range(N_TINTS)]


def luma(rgb):
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def paste_item(img, g, x, y, tints):
    """Paints item g (an L image, the scaled Fashion-MNIST grey levels) at (x, y) as an opaque
    object: colour = tint * (0.3 + 0.7 * grey / 255), so the garment's texture stays, over the
    silhouette grey > 0 (alpha min(1, grey / 32): a soft edge). The tint is the first of tints whose
    shaded mean differs in luma by MIN_CONTRAST from the photograph's mean under the silhouette,
    else the one that differs most."""
    from PIL import Image, ImageStat
    alpha = g.point(lambda v: min(255, v * 8))
    shade = 0.3 + 0.7 * ImageStat.Stat(g, alpha).mean[0] / 255.0
    under = luma(ImageStat.Stat(img.crop((x, y, x + g.width, y + g.height)), alpha).mean)
    best = max(tints, key=lambda t: abs(luma(t) * shade - under))
    for t in tints:
        if abs(luma(t) * shade - under) >= MIN_CONTRAST:
            best = t
            break
    item = Image.merge("RGB", [g.point(lambda v, c=c: int(c * (0.3 + 0.7 * v / 255.0) + 0.5))
                               for c in best])
    img.paste(item, (x, y), alpha)


def render(i, seed, size, photos, items, draw=True):
    """Image i: (PIL RGB image, [(class index, x1, y1, x2, y2)]). items: (n, pixels, labels) of
    an IDX split. draw=False returns the bare background with the same boxes (for tests)."""
    from PIL import Image
    rng = random.Random(seed * 1000003 + i)
    img = background(rng, photos, size)
    n, pixels, labels = items
    boxes = []
    want = rng.randint(1, 4)
    overlap = rng.random() < 0.35
    for _ in range(want):
        for _try in range(20):
            k = rng.randrange(n)
            s = rng.randint(MIN_SCALE, min(MAX_SCALE, size // 2))
            if overlap and boxes:  # beside the last item, partly over it
                b = boxes[-1]
                x = min(max(0, b[1] + rng.randint(-s // 2, s // 2)), size - s)
                y = min(max(0, b[2] + rng.randint(-s // 2, s // 2)), size - s)
            else:
                x, y = rng.randint(0, size - s), rng.randint(0, size - s)
            tints = draw_tints(rng)
            g = Image.frombytes("L", (28, 28), pixels[k * 784:(k + 1) * 784]).resize(
                (s, s), Image.BILINEAR)
            bb = g.getbbox()
            if not bb:
                continue
            box = (x + bb[0], y + bb[1], x + bb[2], y + bb[3])
            worst = max([iou(box, o[1:]) for o in boxes] or [0.0])
            if worst > 0.4 or (overlap and boxes and worst < 0.1):
                continue
            if draw:
                paste_item(img, g, x, y, tints)
            boxes.append((labels[k],) + box)
            break
    return img, boxes


def label_text(boxes):
    return "".join("%s 0.00 0 0.00 %.2f %.2f %.2f %.2f 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n"
                   % ((CLASSES[c],) + tuple(float(v) for v in b)) for c, *b in boxes)


def read_items(fm, stem):
    (n, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
    _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
    assert (h, w) == (28, 28)
    return n, px, labels


def _write_part(args):
    root, split, stem, off, lo, hi, size, seed, fm, photos_dir = args
    photos = load_photos(photos_dir, size)
    items = read_items(fm, stem)
    for i in range(lo, hi):
        img, boxes = render(off + i, seed, size, photos, items)
        img.save(os.path.join(root, split, "images", "%06d.png" % i))
        with open(os.path.join(root, split, "labels", "%06d.txt" % i), "w") as f:
            f.write(label_text(boxes))


def write(root, count, size, seed, fm, photos_dir, val=None, jobs=1):
    """Writes the set (in jobs processes: image i depends on i alone, so the files are the same
    for any jobs); returns {split: images}."""
    if not load_photos(photos_dir, size):
        raise SystemExit("gen_detect: no usable photographs in %s" % photos_dir)
    val = count // 10 if val is None else val
    out, parts = {}, []
    for split, stem, n, off in (("train", "train", count, 0), ("val", "t10k", val, 10 ** 7)):
        for sub in ("images", "labels"):
            os.makedirs(os.path.join(root, split, sub), exist_ok=True)
        step = (n + jobs * 4 - 1) // (jobs * 4) or 1
        parts += [(root, split, stem, off, lo, min(n, lo + step), size, seed, fm, photos_dir)
                  for lo in range(0, n, step)]
        out[split] = n
    if jobs > 1:
        from multiprocessing import Pool
        with Pool(jobs) as pool:
            pool.map(_write_part, parts)
    else:
        for part in parts:
            _write_part(part)
    with open(os.path.join(root, "classes.txt"), "w") as f:
        f.write("".join(c + "\n" for c in CLASSES))
    return out


COCO_LAYOUTS = ("flat", "splits", "instances")


def coco_categories():
    """[{id, name}]: every class, ids 1, 3, 5, ... in sorted-name order."""
    return [{"id": 1 + 2 * i, "name": n, "supercategory": "fashion"}
            for i, n in enumerate(sorted(CLASSES))]


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def to_coco(kitti, root, layout):
    """Writes the KITTI set at kitti (write()'s layout) as COCO at root (LAYOUT above), images
    hard-linked (copied across file systems); returns {split: images}."""
    import json
    import shutil
    if layout not in COCO_LAYOUTS:
        raise ValueError("layout: one of %s" % ", ".join(COCO_LAYOUTS))
    cats = coco_categories()
    cat_of = {c["name"]: c["id"] for c in cats}
    splits = ["train"] if layout == "flat" else ["train", "val"]
    out, ann_id = {}, 1
    for split in splits:
        idir = os.path.join(kitti, split, "images")
        names = sorted(f for f in os.listdir(idir) if f.endswith(".png"))
        if layout == "flat":
            jpath, dest = os.path.join(root, "annotations.json"), os.path.join(root, "images")
        elif layout == "splits":
            jpath = os.path.join(root, split, "annotations.json")
            dest = os.path.join(root, split, "images")
        else:
            jpath = os.path.join(root, "annotations", "instances_%s2017.json" % split)
            dest = os.path.join(root, "%s2017" % split)
        os.makedirs(os.path.dirname(jpath), exist_ok=True)
        os.makedirs(dest, exist_ok=True)
        images, anns = [], []
        base = 1000 if split == "train" else 500000
        for i, name in enumerate(names):
            src = os.path.join(idir, name)
            try:
                os.link(src, os.path.join(dest, name))
            except OSError:
                shutil.copyfile(src, os.path.join(dest, name))
            w, h = png_size(src)
            images.append({"id": base + i, "file_name": name, "width": w, "height": h})
            with open(os.path.join(kitti, split, "labels", name[:-4] + ".txt")) as f:
                for line in f:
                    t = line.split()
                    if not t:
                        continue
                    x1, y1, x2, y2 = (float(v) for v in t[4:8])
                    anns.append({"id": ann_id, "image_id": base + i, "category_id": cat_of[t[0]],
                                 "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1),
                                 "iscrowd": 0, "segmentation": []})
                    ann_id += 1
        with open(jpath, "w") as f:
            json.dump({"info": {"description": "gen_detect.py"}, "licenses": [],
                       "images": images, "annotations": anns, "categories": cats}, f)
        out[split] = len(images)
    return out


def render_item(i, seed, size, photos, items):
    """Classification image i (--classify): (PIL RGB image, class index): item i of the split
    (i modulo its count) pasted as render() pastes one, scaled to half the side up to the whole
    of it, on a photograph crop."""
    from PIL import Image
    rng = random.Random(seed * 1000003 + 5 * 10 ** 8 + i)
    img = background(rng, photos, size)
    n, pixels, labels = items
    k = i % n
    s = rng.randint(size // 2, size)
    x, y = rng.randint(0, size - s), rng.randint(0, size - s)
    tints = draw_tints(rng)
    g = Image.frombytes("L", (28, 28), pixels[k * 784:(k + 1) * 784]).resize((s, s),
                                                                             Image.BILINEAR)
    paste_item(img, g, x, y, tints)
    return img, labels[k]


def _classify_part(args):
    root, split, stem, lo, hi, size, seed, fm, photos_dir = args
    photos = load_photos(photos_dir, size)
    items = read_items(fm, stem)
    for i in range(lo, hi):
        img, c = render_item(i, seed, size, photos, items)
        img.save(os.path.join(root, split, CLASSES[c], "%06d.png" % i))


def write_classify(root, count, size, seed, fm, photos_dir, jobs):
    """--classify: an image folder (ROOT/train/<class>/, ROOT/test/<class>/: count and count / 6
    images) of single items in the detection set's look, to pretrain a backbone on; the training
    part draws from Fashion-MNIST's training file, the test part from t10k."""
    from multiprocessing import Pool
    if not load_photos(photos_dir, size):
        raise SystemExit("gen_detect: no usable photographs in %s" % photos_dir)
    parts, out = [], {}
    for split, stem, n in (("train", "train", count), ("test", "t10k", count // 6)):
        for c in CLASSES:
            os.makedirs(os.path.join(root, split, c), exist_ok=True)
        step = (n + jobs * 4 - 1) // (jobs * 4) or 1
        parts += [(root, split, stem, lo, min(n, lo + step), size, seed, fm, photos_dir)
                  for lo in range(0, n, step)]
        out[split] = n
    with Pool(jobs) as pool:
        pool.map(_classify_part, parts)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--tiny", action="store_true", help="300 images at 128x128")
    ap.add_argument("--count", type=int, help="training images (default 5000, tiny 300)")
    ap.add_argument("--size", type=int, help="image side (default 160, tiny 128; at least 128)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--photos", help="folder of photographs (default: see above)")
    ap.add_argument("--classify", action="store_true",
                    help="an image folder of single items to pretrain a backbone on (default "
                         "60000 images at 72x72)")
    ap.add_argument("--coco", choices=COCO_LAYOUTS,
                    help="write the set as COCO in this layout (see above)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="processes (default: the cores)")
    a = ap.parse_args()
    if a.classify:
        fm, photos = fmnist_folder.find_fmnist(), find_photos(a.photos)
        if not fm or not photos:
            print("gen_detect: Fashion-MNIST or photographs not found", file=sys.stderr)
            return 2
        size = a.size or 72
        n = write_classify(a.root, a.count or 60000, size, a.seed, fm, photos, max(1, a.jobs))
        print("gen_detect: %s: %d train, %d test images at %dx%d" % (a.root, n["train"],
                                                                   n["test"], size, size))
        return 0
    count = a.count if a.count is not None else 300 if a.tiny else 5000
    size = a.size or (128 if a.tiny else 160)
    if size < 128:
        ap.error("--size must be at least 128")
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("gen_detect: Fashion-MNIST not found (set HONE_FMNIST_DIR)", file=sys.stderr)
        return 2
    photos = find_photos(a.photos)
    if not photos:
        print("gen_detect: no photographs found: run scripts/bootstrap.sh (it fetches them into "
              ".cache/photos), or set HONE_PHOTOS_DIR or --photos", file=sys.stderr)
        return 2
    if a.coco:
        import shutil
        import tempfile
        os.makedirs(a.root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".kitti-", dir=a.root)
        try:
            write(tmp, count, size, a.seed, fm, photos, jobs=max(1, a.jobs))
            n = to_coco(tmp, a.root, a.coco)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("gen_detect: %s: COCO (%s) %s at %dx%d" % (
            a.root, a.coco, ", ".join("%d %s" % (v, k) for k, v in n.items()), size, size))
        return 0
    n = write(a.root, count, size, a.seed, fm, photos, jobs=max(1, a.jobs))
    print("gen_detect: %s: %d train, %d val images at %dx%d" % (a.root, n["train"], n["val"],
                                                              size, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
