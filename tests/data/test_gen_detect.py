#!/usr/bin/python3
"""tests/data/gen_detect.py: the same files for a seed (and different ones for another), every box
inside the image with x1 < x2 and y1 < y2, class names from classes.txt, and labels that match
the drawn items: every pixel the items changed lies in some box, and a box that overlaps no other
is exactly the bounding box of the pixels changed in it. The set written as COCO (to_coco) in
each layout holds the same images and boxes. Skips (77) without Pillow, Fashion-MNIST
or the photographs."""
import filecmp
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist_folder  # noqa: E402
import gen_detect  # noqa: E402


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    todo = [cmp]
    while todo:
        c = todo.pop()
        if c.left_only or c.right_only or c.diff_files or c.funny_files:
            return False
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        if mismatch or errors:
            return False
        todo += c.subdirs.values()
    return True


def check_coco(kitti, d):
    """to_coco: each layout holds the KITTI set's images (the same bytes) and boxes ([x, y, w, h]
    of the same corners, in the same order), categories sparse in sorted-name order."""
    import json
    cats = gen_detect.coco_categories()
    assert [c["name"] for c in cats] == sorted(gen_detect.CLASSES)
    assert [c["id"] for c in cats] == list(range(1, 20, 2))
    name_of = {c["id"]: c["name"] for c in cats}
    where = {"flat": {"train": ("annotations.json", "images")},
             "splits": {s: (s + "/annotations.json", s + "/images") for s in ("train", "val")},
             "instances": {s: ("annotations/instances_%s2017.json" % s, s + "2017")
                           for s in ("train", "val")}}
    ann_ids = set()
    for layout, splits in where.items():
        root = os.path.join(d, "coco-" + layout)
        n = gen_detect.to_coco(kitti, root, layout)
        assert n == {s: (30 if s == "train" else 3) for s in splits}, (layout, n)
        for split, (jname, idir) in splits.items():
            js = json.load(open(os.path.join(root, jname)))
            assert js["categories"] == cats
            by_image = {}
            for a in js["annotations"]:
                assert a["iscrowd"] == 0 and a["id"] not in ann_ids  # unique across files
                by_image.setdefault(a["image_id"], []).append(a)
            for im in js["images"]:
                f = im["file_name"]
                assert filecmp.cmp(os.path.join(root, idir, f),
                                   os.path.join(kitti, split, "images", f), shallow=False)
                assert (im["width"], im["height"]) == (128, 128)
                want = [line.split() for line in
                        open(os.path.join(kitti, split, "labels", f[:-4] + ".txt"))]
                got = by_image.get(im["id"], [])
                assert len(got) == len(want), (layout, f)
                for a, w in zip(got, want):
                    x, y, bw, bh = a["bbox"]
                    assert name_of[a["category_id"]] == w[0]
                    assert [x, y, x + bw, y + bh] == [float(v) for v in w[4:8]], (a, w)
            if layout == "instances":
                ann_ids |= {a["id"] for a in js["annotations"]}


def main():
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("skip: no Pillow")
        return 77
    fm, photos = fmnist_folder.find_fmnist(), gen_detect.find_photos()
    if not fm or not photos:
        print("skip: Fashion-MNIST (%s) or photographs (%s) missing" % (fm, photos))
        return 77
    from PIL import Image, ImageChops
    d = tempfile.mkdtemp(prefix="hone-gen-detect-")
    try:
        a, b, c = (os.path.join(d, x) for x in "abc")
        assert gen_detect.write(a, 30, 128, 5, fm, photos) == {"train": 30, "val": 3}
        gen_detect.write(b, 30, 128, 5, fm, photos)
        gen_detect.write(c, 30, 128, 6, fm, photos)
        assert same_tree(a, b), "not deterministic for a seed"
        assert not same_tree(a, c), "the seed changes nothing"
        names = open(os.path.join(a, "classes.txt")).read().split()
        assert names == gen_detect.CLASSES and len(names) == 10
        nboxes, overlapping, scales = 0, 0, []
        items = gen_detect.read_items(fm, "train")
        loaded = gen_detect.load_photos(photos, 128)
        for i in range(30):
            img = Image.open(os.path.join(a, "train", "images", "%06d.png" % i))
            assert img.size == (128, 128) and img.mode == "RGB"
            boxes = []
            for line in open(os.path.join(a, "train", "labels", "%06d.txt" % i)):
                f = line.split()
                assert len(f) == 15 and f[0] in names, line
                x1, y1, x2, y2 = (float(v) for v in f[4:8])
                assert 0 <= x1 < x2 <= 128 and 0 <= y1 < y2 <= 128, line
                boxes.append((int(x1), int(y1), int(x2), int(y2)))
                scales.append(max(x2 - x1, y2 - y1))
            assert 1 <= len(boxes) <= 4
            nboxes += len(boxes)
            # the drawn image against the bare background of the same draw
            bare, want = gen_detect.render(i, 5, 128, loaded, items, draw=False)
            assert [tuple(w[1:]) for w in want] == boxes
            assert [names[w[0]] for w in want] == [
                l.split()[0] for l in open(os.path.join(a, "train", "labels", "%06d.txt" % i))]
            diff = ImageChops.difference(img.convert("RGB"), bare).convert("L")
            px = diff.load()
            changed = [(x, y) for y in range(128) for x in range(128) if px[x, y]]
            assert changed, "image %d: nothing drawn" % i
            for x, y in changed:
                assert any(b[0] <= x < b[2] and b[1] <= y < b[3] for b in boxes), (i, x, y)
            for k, bx in enumerate(boxes):
                others = [o for j, o in enumerate(boxes) if j != k]
                if any(gen_detect.iou(bx, o) > 0 for o in others):
                    overlapping += 1
                    continue
                inside = [(x, y) for x, y in changed if bx[0] <= x < bx[2] and bx[1] <= y < bx[3]]
                xs, ys = [p[0] for p in inside], [p[1] for p in inside]
                # a tint equal to the photo can hide an edge pixel: allow one pixel of slack
                got = (min(xs), min(ys), max(xs) + 1, max(ys) + 1)
                assert all(abs(g - w) <= 1 for g, w in zip(got, bx)), (i, got, bx)
        assert overlapping > 0, "no overlapping items"
        assert min(scales) < 40 and max(scales) > 50, scales
        check_coco(a, d)
        print("gen_detect: %d boxes in 30 images, %d overlapping, ok" % (nboxes, overlapping))
        return 0
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    sys.exit(main())
