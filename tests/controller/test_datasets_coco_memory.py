"""The memory of COCO dataset checks against a real hone-controller started with a small
limits.coco_json_memory (16 MiB; the default is 2 GiB): a small COCO file whose parse would take
more (the review's trigger scaled down: {"images": [], "annotations": [], "categories": ["", "",
...]}, 3 bytes a string that jansson makes into ~100) is refused before it is parsed, with 422
naming `path` (or the upload), the file, the memory it would take and the key to raise, whether
it is registered from a folder or uploaded as a gzipped tar; nothing is stored. A normal set is
still checked, and two checks that each fit but not together both succeed (one waits for the
other rather than being refused). A value of the key out of range stops the controller with a
message naming it. Stdlib only: never skips."""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402
from test_datasets_coco import coco_json, n_datasets, refused, write_flat  # noqa: E402

LIMIT = 16 << 20


def trigger_text(count):
    return '{"images":[],"annotations":[],"categories":[' + ",".join(['""'] * count) + "]}"


def tgz_of(root):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for dp, _, fs in sorted(os.walk(root)):
            for name in sorted(fs):
                p = os.path.join(dp, name)
                t.add(p, arcname=os.path.relpath(p, root))
    return bio.getvalue()


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "root")
    good = os.path.join(root, "good")
    write_flat(good, coco_json(1, 6))
    trap = os.path.join(root, "trap")
    os.makedirs(os.path.join(trap, "images"))
    text = trigger_text(300000)  # 900 KB of text, about 44 MiB once parsed
    with open(os.path.join(trap, "annotations.json"), "w") as f:
        f.write(text)
    # two sets that fit the budget alone (about 10 MiB each) but not together: the info key,
    # which the check ignores, padded with empty strings
    pads = []
    for k in range(2):
        js = coco_json(1, 4)
        js["info"] = {"pad": [""] * 70000}
        p = os.path.join(root, "pad%d" % k)
        write_flat(p, js)
        pads.append(p)
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlog_format: json\nlimits:\n  coco_json_memory: %d\n"
                % (root, LIMIT))
    c = Controller(binary, os.path.join(d, "data"), config=cfg)
    os.makedirs(c.data_dir)
    c.start()
    try:
        body = {"name": "det", "type": "object_detection", "format": "coco", "path": good}
        ds = c.ok("POST", "/api/v1/datasets", body)
        assert ds["stats"]["images"] == 6, ds
        # the trigger from a folder: refused before jansson sees it
        refused(c, dict(body, path=trap), "path",
                ["path: ", "annotations.json: parsing it takes up to ",
                 "more than the 16 MiB that COCO files may take at once here",
                 "limits.coco_json_memory"])
        st, js = c.req("POST", "/api/v1/datasets", dict(body, path=trap))
        mib = int(js["error"]["message"].split("parsing it takes up to ")[1].split(" MiB")[0])
        assert 30 <= mib <= 80, js  # about 148 bytes a 3-byte string
        # and uploaded as a gzipped tar (a few KB)
        tgz = tgz_of(trap)
        assert len(tgz) < 20000, len(tgz)
        before = n_datasets(c)
        url = "/api/v1/datasets:upload?name=up&type=object_detection&format=coco"
        st, js = c.req("POST", url, raw=tgz, headers={"Content-Type": "application/gzip"})
        assert st == 422, (st, js)
        msg = js["error"]["message"]
        assert "annotations.json: parsing it takes up to %d MiB" % mib in msg, js
        assert "limits.coco_json_memory" in msg, js
        assert n_datasets(c) == before, "a refused upload was stored"
        # two checks that fit alone but not together: both pass, one after the other
        res = [None, None]

        def create(k):
            res[k] = c.req("POST", "/api/v1/datasets",
                           dict(body, name="pad%d" % k, path=pads[k]))

        th = [threading.Thread(target=create, args=(k,)) for k in range(2)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        for st, js in res:
            assert st == 201 and js["stats"]["images"] == 4, (st, js)
    finally:
        c.stop()
    # the key is checked: a value below 1 MiB stops the controller, naming it
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlimits:\n  coco_json_memory: 1000\n" % root)
    r = subprocess.run([binary, "--config", cfg, "--data-dir", os.path.join(d, "data2")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "limits.coco_json_memory" in r.stderr, (r.returncode, r.stderr)
    shutil.rmtree(d, ignore_errors=True)
    print("coco check memory: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
