"""kitti datasets (type object_detection) against a real hone-controller: a tiny set written by
tests/data/gen_detect.py is checked through data/ at create time: 201 with images per split,
boxes per class and image sizes in its stats, the class map found or given by `classes`; a
broken set is refused with 422 naming `path` and the file and line of its problems; nothing is
stored on a refusal. Skips (77) without Debian's python3 with Pillow, Fashion-MNIST or the
photographs the generator needs."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "gen_detect.py")


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
    good = os.path.join(root, "good")
    r = subprocess.run(["/usr/bin/python3", GEN, good, "--tiny", "--count", "20"],
                       capture_output=True, text=True)
    if r.returncode == 2 or "No module named 'PIL'" in r.stderr:
        print("skip: %s" % r.stderr.strip())
        return 77
    assert r.returncode == 0, r.stderr
    bad = os.path.join(root, "bad")
    shutil.copytree(good, bad)
    with open(os.path.join(bad, "train", "labels", "000003.txt"), "a") as f:
        f.write("coat 0 0 0 10 10 5 20 0 0 0 0 0 0 0\n")
    os.remove(os.path.join(bad, "train", "images", "000007.png"))
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlog_format: json\n" % root)
    c = Controller(binary, os.path.join(d, "data"), config=cfg)
    os.makedirs(c.data_dir)
    c.start()
    try:
        body = {"name": "det", "type": "object_detection", "format": "kitti", "path": good}
        ds = c.ok("POST", "/api/v1/datasets", body)
        st = ds["stats"]
        assert ds["type"] == "object_detection" and ds["format"] == "kitti", ds
        # training tests on a tenth of train/ (no test/ folder): the stats count what it uses
        assert st["train_images"] == 18 and st["val_images"] == 2 and st["images"] == 22, st
        assert st["test_images"] == 2 and st["test_from_train"] == 2, st
        assert st["layout"] == "splits" and st["min_size"] == [128, 128], st
        assert st["max_size"] == [128, 128] and st["formats"]["png"] == 22, st
        assert st["class_names"] == sorted(st["class_names"]), st
        assert sum(st["class_boxes"]) == st["boxes"] > 22 and st["dontcare_boxes"] == 0, st
        assert c.ok("GET", "/api/v1/datasets/" + ds["id"])["stats"] == st
        # the class map given: its order, all ten classes, some with no box in this tiny set
        names = open(os.path.join(good, "classes.txt")).read().split()
        ds2 = c.ok("POST", "/api/v1/datasets", dict(body, classes=[n.upper() for n in names]))
        assert ds2["stats"]["class_names"] == [n.upper() for n in names], ds2["stats"]
        assert sum(ds2["stats"]["class_boxes"]) == st["boxes"]
        # refusals: every problem named with its file (and line), nothing stored
        refused(c, dict(body, path=bad), "path",
                ["path: ", "2 problems", "train/labels/000003.txt:", "inverted",
                 "train/labels/000007.txt: no image for this label file"])
        refused(c, dict(body, classes=["sandal"]), "path", ["unknown class"])
        refused(c, dict(body, classes=["a", "A"]), "classes", ["duplicate"])
        refused(c, dict(body, classes=[""]), "classes", ["classes[0]"])
        refused(c, dict(body, classes=[]), "classes", [])
        refused(c, {"name": "x", "format": "image_folder", "path": good, "classes": ["a"]},
                "classes", ["kitti"])
        refused(c, dict(body, type="image_classification"), "format", ["does not fit"])
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)
    print("kitti datasets: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
