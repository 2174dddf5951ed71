"""coco datasets (type object_detection) against a real hone-controller: small COCO sets written
here (stdlib PNGs) are checked whole through data/ at create time, from a folder in each layout
(annotations.json with images/; annotations/instances_{train,val}2017.json with train2017/ and
val2017/) and from an uploaded tar: 201 with images per split, boxes per class, the classes as
the categories by id (category_ids beside class_names) and iscrowd boxes counted as ignore
regions. Each defect (duplicate ids, an annotation of an unknown image or category, an image
listed but missing on disk or of another size, a box outside its image or empty, a bad type,
broken JSON) is refused with 422 naming `path` (or `archive`), the JSON file and the id; several
problems are all counted; nothing is stored on a refusal. Stdlib only: never skips."""
import copy
import io
import json
import os
import shutil
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pngfolder import png_bytes  # noqa: E402

SIZE = 32
CATS = [{"id": 7, "name": "dog", "supercategory": "animal"},
        {"id": 3, "name": "cat", "supercategory": "animal"}]


def png(i):
    pat = bytes(((k * 7 + 13 * i) ^ (k // 5)) % 256 for k in range(6 * SIZE))
    return png_bytes(SIZE, SIZE, [pat[(y * 9 + i) % (3 * SIZE):][:3 * SIZE]
                                  for y in range(SIZE)], True)


def coco_json(first_id, n, ann0=1, crowd=True):
    """n images (ids first_id..), one or two boxes each; image 0's second box a crowd region."""
    images, anns = [], []
    for i in range(n):
        iid = first_id + i
        images.append({"id": iid, "file_name": "%06d.png" % iid, "width": SIZE, "height": SIZE})
        anns.append({"id": ann0 + len(anns), "image_id": iid, "category_id": (3, 7)[i % 2],
                     "bbox": [i % 8, 2.5, 12, 10], "area": 120, "iscrowd": 0})
        if i == 0 and crowd:
            anns.append({"id": ann0 + len(anns), "image_id": iid, "category_id": 7,
                         "bbox": [16, 16, 16, 16], "area": 256, "iscrowd": 1})
    return {"info": {}, "licenses": [], "images": images, "annotations": anns,
            "categories": CATS}


def write_flat(root, js):
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    for im in js["images"]:
        with open(os.path.join(root, "images", im["file_name"]), "wb") as f:
            f.write(png(im["id"]))
    with open(os.path.join(root, "annotations.json"), "w") as f:
        json.dump(js, f)


def write_instances(root):
    os.makedirs(os.path.join(root, "annotations"), exist_ok=True)
    for split, first, n, ann0 in (("train", 100, 4, 1), ("val", 200, 2, 50)):
        js = coco_json(first, n, ann0, crowd=split == "train")
        os.makedirs(os.path.join(root, split + "2017"), exist_ok=True)
        for im in js["images"]:
            with open(os.path.join(root, split + "2017", im["file_name"]), "wb") as f:
                f.write(png(im["id"]))
        with open(os.path.join(root, "annotations", "instances_%s2017.json" % split), "w") as f:
            json.dump(js, f)


def tar_of(root):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for dp, _, fs in sorted(os.walk(root)):
            for name in sorted(fs):
                p = os.path.join(dp, name)
                t.add(p, arcname=os.path.relpath(p, root))
    return bio.getvalue()


def n_datasets(c):
    return len(c.ok("GET", "/api/v1/datasets")["datasets"])


def refused(c, body, field, want):
    before = n_datasets(c)
    st, js = c.req("POST", "/api/v1/datasets", body)
    assert st == 422 and js["error"]["field"] == field, (body, st, js)
    for w in want:
        assert w in js["error"]["message"], (w, js)
    assert n_datasets(c) == before, "a refused dataset was stored"


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "root")
    good_js = coco_json(1, 6)
    flat = os.path.join(root, "flat")
    write_flat(flat, good_js)
    inst = os.path.join(root, "inst")
    write_instances(inst)
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlog_format: json\n" % root)
    c = Controller(binary, os.path.join(d, "data"), config=cfg)
    os.makedirs(c.data_dir)
    c.start()
    try:
        body = {"name": "det", "type": "object_detection", "format": "coco", "path": flat}
        ds = c.ok("POST", "/api/v1/datasets", body)
        st = ds["stats"]
        assert ds["type"] == "object_detection" and ds["format"] == "coco", ds
        assert st["images"] == 6 and st["train_images"] == 6 and st["val_images"] == 0, st
        assert st["layout"] == "flat" and st["min_size"] == [SIZE, SIZE], st
        # the categories by id: 3 cat (class 0), 7 dog (class 1); names kept
        assert st["class_names"] == ["cat", "dog"] and st["category_ids"] == [3, 7], st
        assert st["boxes"] == 7 and st["crowd_boxes"] == 1 and st["dontcare_boxes"] == 1, st
        assert st["class_boxes"] == [3, 3], st
        assert c.ok("GET", "/api/v1/datasets/" + ds["id"])["stats"] == st
        # COCO's own layout: the val file is the val split
        di = c.ok("POST", "/api/v1/datasets", dict(body, path=inst))["stats"]
        assert di["train_images"] == 4 and di["val_images"] == 2 and di["layout"] == "splits", di
        assert di["category_ids"] == [3, 7] and di["crowd_boxes"] == 1, di
        # an upload of the folder's contents
        url = "/api/v1/datasets:upload?name=up&type=object_detection&format=coco"
        tar = {"Content-Type": "application/x-tar"}
        up = c.ok("POST", url, raw=tar_of(flat), headers=tar, want=(201,))
        assert up["format"] == "coco" and up["stats"]["class_names"] == ["cat", "dog"], up
        assert up["stats"]["boxes"] == 7 and up["stats"]["crowd_boxes"] == 1, up

        # each defect: refused naming the JSON file and the id, nothing stored
        def defect(name, change, want):
            bad = os.path.join(root, name)
            js = copy.deepcopy(good_js)
            change(js)
            write_flat(bad, good_js)  # every image on disk
            with open(os.path.join(bad, "annotations.json"), "w") as f:
                json.dump(js, f)
            refused(c, dict(body, path=bad), "path", ["path: ", "annotations.json: "] + want)
            return bad

        defect("dup_image", lambda j: j["images"][1].update(id=1),
               ["image 1: id listed twice"])
        defect("dup_ann", lambda j: j["annotations"][2].update(id=1),
               ["annotation 1: id listed more than once"])
        defect("unknown_image", lambda j: j["annotations"][3].update(image_id=99),
               ["annotation 4: image_id 99 is not an image of this file"])
        defect("unknown_cat", lambda j: j["annotations"][3].update(category_id=5),
               ["annotation 4: category_id 5 is not a category of this file"])
        defect("outside", lambda j: j["annotations"][0].update(bbox=[25, 0, 10, 5]),
               ["annotation 1: bbox [25, 0, 10, 5] lies outside image 1 (32x32)"])
        defect("empty", lambda j: j["annotations"][2].update(bbox=[1, 1, 0, 5]),
               ["annotation 3: bbox [1, 1, 0, 5] is empty"])
        defect("bad_type", lambda j: j["annotations"][2].update(bbox="1 1 5 5"),
               ["annotation 3: bbox must be [x, y, width, height]"])
        defect("bad_crowd", lambda j: j["annotations"][2].update(iscrowd="no"),
               ["annotation 3: iscrowd must be 0 or 1"])
        defect("bad_size", lambda j: j["images"][2].update(width=64),
               ["image 3 (000003.png): the JSON says 64x32, the file is 32x32"])
        defect("dup_cat", lambda j: j["categories"].append({"id": 3, "name": "cow"}),
               ["category 3: id listed twice"])
        # several problems: all counted, each named
        def several(j):
            j["annotations"][0]["category_id"] = 5
            j["annotations"][3]["bbox"] = [0, 0, -1, 3]
            j["images"].append({"id": 40, "file_name": "gone.png", "width": SIZE,
                                "height": SIZE})
        defect("several", several, ["3 problems", "annotation 1: category_id 5",
                                    "annotation 4: bbox", "image 40: images/gone.png: "])
        # an image listed but missing on disk
        miss = os.path.join(root, "missing")
        write_flat(miss, good_js)
        os.remove(os.path.join(miss, "images", "000005.png"))
        refused(c, dict(body, path=miss), "path",
                ["annotations.json: image 5: images/000005.png: "])
        # broken JSON, and no COCO layout at all
        broken = os.path.join(root, "broken")
        write_flat(broken, good_js)
        with open(os.path.join(broken, "annotations.json"), "w") as f:
            f.write('{"images": [')
        refused(c, dict(body, path=broken), "path", ["annotations.json: not valid JSON"])
        refused(c, dict(body, path=os.path.join(flat, "images")), "path",
                ["not a COCO dataset"])
        # the val file of COCO's layout is checked too, named by its path
        with open(os.path.join(inst, "annotations", "instances_val2017.json")) as f:
            vj = json.load(f)
        vj["annotations"][0]["image_id"] = 7
        with open(os.path.join(inst, "annotations", "instances_val2017.json"), "w") as f:
            json.dump(vj, f)
        refused(c, dict(body, path=inst), "path",
                ["annotations/instances_val2017.json: annotation 50: image_id 7"])
        # a class map is KITTI's; type and format must fit
        refused(c, dict(body, classes=["cat", "dog"]), "classes", ["kitti"])
        refused(c, dict(body, type="image_classification"), "format", ["does not fit"])
        # an uploaded set with a defect: refused naming the file and the id, nothing kept
        bad = os.path.join(root, "outside")
        before = n_datasets(c)
        st_, js_ = c.req("POST", url.replace("=up", "=bad"), raw=tar_of(bad), headers=tar)
        assert st_ == 422 and "annotations.json: annotation 1: bbox" in \
            js_["error"]["message"], (st_, js_)
        assert n_datasets(c) == before
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)
    print("coco datasets: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
