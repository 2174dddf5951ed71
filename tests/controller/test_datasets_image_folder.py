"""image_folder datasets against a real hone-controller: a server-side folder (flat, or train/ and
val/ splits) is checked through data/ at create time: 201 with the class map and counts per split
in its stats, or 422 naming the file: an undecodable image, an empty class, mismatched splits, no
classes, a symlink escaping the folder, an unsupported format; nothing stored on a refusal. An
uploaded archive names the bad file inside it (<archive>/...)."""
import io
import os
import struct
import sys
import tarfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir  # noqa: E402


def tiny_png(v=0, w=2, h=2):
    """A w x h grey PNG, stdlib only."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I",
                                                                        zlib.crc32(kind + data))
    raw = b"".join(b"\0" + bytes([v]) * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def n_datasets(c):
    return len(c.ok("GET", "/api/v1/datasets")["datasets"])


def refused(c, path, want):
    before = n_datasets(c)
    st, js = c.req("POST", "/api/v1/datasets", {"name": "x", "path": path,
                                                "format": "image_folder"})
    assert st == 422 and js["error"]["field"] == "path", (path, st, js)
    assert want in js["error"]["message"], (want, js)
    assert n_datasets(c) == before, "a refused dataset was stored"


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "root")
    for cls, n in (("dog", 3), ("cat", 2)):
        for i in range(n):
            put(os.path.join(root, "flat", cls, "%d.png" % i), tiny_png(i))
    put(os.path.join(root, "flat", "README.txt"), b"skipped")
    for split, n in (("train", 2), ("val", 1)):
        for cls in ("a", "b"):
            for i in range(n):
                put(os.path.join(root, "sp", split, cls, "%d.png" % i), tiny_png(i))
    put(os.path.join(root, "corrupt", "a", "1.png"), tiny_png())
    put(os.path.join(root, "corrupt", "a", "2.png"), b"\x89PNG\r\n\x1a\nnot really")
    put(os.path.join(root, "emptycls", "a", "1.png"), tiny_png())
    os.makedirs(os.path.join(root, "emptycls", "b"))
    put(os.path.join(root, "mismatch", "train", "a", "1.png"), tiny_png())
    put(os.path.join(root, "mismatch", "val", "z", "1.png"), tiny_png())
    put(os.path.join(root, "noclass", "notes.txt"), b"no classes")
    put(os.path.join(root, "escape", "a", "1.png"), tiny_png())
    put(os.path.join(d, "outside.png"), tiny_png())
    os.symlink(os.path.join(d, "outside.png"), os.path.join(root, "escape", "a", "2.png"))
    put(os.path.join(root, "bmp", "a", "1.bmp"), b"BM....")
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlog_format: json\n" % root)
    c = Controller(binary, os.path.join(d, "data"), config=cfg)
    os.makedirs(c.data_dir)
    c.start()
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "flat", "path": root + "/flat",
                                               "format": "image_folder"})
        st = ds["stats"]
        assert st["train_images"] == 5 and st["val_images"] == 0 and st["classes"] == 2, st
        assert st["class_names"] == ["cat", "dog"] and st["class_images"] == {"train": [2, 3]}, st
        assert st["layout"] == "flat" and st["formats"] == {"png": 5, "jpeg": 0}, st
        assert st["skipped_files"] == 1 and st["min_size"] == [2, 2], st
        ds = c.ok("POST", "/api/v1/datasets", {"name": "sp", "path": root + "/sp",
                                               "format": "image_folder"})
        st = ds["stats"]
        assert st["layout"] == "splits" and st["train_images"] == 4 and st["val_images"] == 2, st
        assert st["class_images"] == {"train": [2, 2], "val": [1, 1]}, st
        refused(c, root + "/corrupt", root + "/corrupt/a/2.png: png:")
        refused(c, root + "/emptycls", root + "/emptycls/b: class folder holds no images")
        refused(c, root + "/mismatch", "class a of train/ is missing")
        refused(c, root + "/noclass", "no class folders")
        refused(c, root + "/escape", root + "/escape/a/2.png: symlink resolves outside")
        refused(c, root + "/bmp", root + "/bmp/a/1.bmp: image format unsupported")
        # an uploaded archive: the bad file named inside it
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for name, data in (("cat/1.png", tiny_png()), ("cat/2.png", b"GIF89a....")):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        stt, js = c.req("POST", "/api/v1/datasets:upload?name=up&format=image_folder",
                        raw=buf.getvalue(), headers={"Content-Type": "application/x-tar"})
        assert stt == 422 and "<archive>/cat/2.png: GIF image unsupported" in \
            js["error"]["message"], (stt, js)
    finally:
        c.stop()
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
