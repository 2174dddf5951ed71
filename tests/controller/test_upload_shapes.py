"""Uploads as people make them (issue 30), against a real hone-controller: a tar of the dataset
folder itself (`tar cf pets.tar pets`: the wrapping folder is stripped) or of its contents (`tar -C
pets .`), the same gzipped (.tgz, told by its first bytes, not its name), and a zip (Python's
zipfile, and `zip -r` when installed); each stored with the same files. With no format the
controller guesses it from the folder's shape (IDX files, class folders, images/ + labels/) and
says so (format_guessed), for uploads and server-side paths alike; a folder of no known shape is a
422 naming format with what was seen. Refusals name the entry and the fix: a folder inside a class
folder, a gzip bomb, a zip with '..', a zip symlink, a bzip2 archive, a zip bomb."""
import gzip
import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pngfolder import write_folder, write_kitti  # noqa: E402

BIN = {"Content-Type": "application/octet-stream"}



def used(st):
    """The images of train/ in all: training holds a tenth out as its test split (test_from_train)."""
    return st["train_images"] + st.get("test_from_train", 0)

def tar_cmd(*args):
    return subprocess.run(["tar"] + list(args), check=True, stdout=subprocess.PIPE).stdout


def zip_of(root, arc_root=None):
    """A zip of root's files (and folders), under arc_root/ when given, as zipfile writes it."""
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED) as z:
        for dp, dns, fns in os.walk(root):
            dns.sort()
            rel = os.path.relpath(dp, root)
            base = arc_root if rel == "." else os.path.join(arc_root or "", rel).lstrip("/")
            if base:
                z.writestr(base.rstrip("/") + "/", b"")
            for f in sorted(fns):
                z.write(os.path.join(dp, f), os.path.join(base or "", f))
    return bio.getvalue()


def files_of(root):
    out = {}
    for dp, _, fns in os.walk(root):
        for f in fns:
            p = os.path.join(dp, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def main():
    binary = binary_from_argv()
    d = tempdir()
    work = os.path.join(d, "work")
    pets = os.path.join(work, "pets")
    write_folder(pets, classes=3, per_class=4, size=16)
    fm = os.path.join(work, "fm")
    write_idx(fm)
    boxes = os.path.join(work, "boxes")
    write_kitti(boxes, images=6, size=32, classes=("dog", "cat"))
    data = os.path.join(d, "data")
    os.makedirs(data)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("limits: {upload_bytes: 67108864}\nlog_format: json\ndata_roots: [\"%s\"]\n" % work)
    c = Controller(binary, data, config=cfg).start()
    dsdir = os.path.join(data, "datasets")
    try:
        def upload(body, name, query=""):
            return c.ok("POST", "/api/v1/datasets:upload?name=%s%s" % (name, query), raw=body,
                        headers=BIN, want=(201,))

        def same(ds, src):
            got, want = files_of(ds["path"]), files_of(src)
            assert got == want, (ds["id"], sorted(got), sorted(want))

        # the image folder, every shape, no --format: guessed, and the files as they were
        shapes = {
            "tar-of-folder": tar_cmd("cf", "-", "-C", work, "pets"),
            "tar-of-contents": tar_cmd("cf", "-", "-C", pets, "."),
            "tgz-of-folder": tar_cmd("czf", "-", "-C", work, "pets"),
            "tgz-of-contents": tar_cmd("czf", "-", "-C", pets, "."),
            "zip-of-folder": zip_of(pets, "pets"),
            "zip-of-contents": zip_of(pets),
        }
        if shutil.which("zip"):
            zp = os.path.join(d, "pets.zip")
            subprocess.run(["zip", "-qr", zp, "pets"], cwd=work, check=True)
            shapes["zip-r"] = open(zp, "rb").read()
        for what, body in shapes.items():
            ds = upload(body, what)
            assert ds["format"] == "image_folder" and ds["format_guessed"] is True, (what, ds)
            assert ds["type"] == "image_classification", (what, ds)
            assert ds["stats"]["classes"] == 3 and used(ds["stats"]) == 12, (what, ds)
            same(ds, pets)
        # long paths: Python's tarfile (pax headers, its default) and GNU tar (GNU long names)
        longp = os.path.join(work, "longp")
        write_folder(longp, classes=2, per_class=2, size=16)
        os.rename(os.path.join(longp, "class1"), os.path.join(longp, "c" * 120))
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as t:
            t.add(longp, "longp")
        for what, body in (("pax", bio.getvalue()),
                           ("gnu-long", tar_cmd("--format=gnu", "-cf", "-", "-C", work, "longp"))):
            ds = upload(body, what)
            assert ds["stats"]["class_names"] == ["c" * 120, "class0"], (what, ds)
            same(ds, longp)
        # the name does not matter: a .tgz is a gzip by its bytes; a given format is not guessed
        ds = upload(gzip.compress(tar_cmd("cf", "-", "-C", work, "pets")), "named",
                    "&format=image_folder")
        assert ds["format_guessed"] is False, ds
        # IDX and KITTI guessed too (KITTI's type with it)
        ds = upload(tar_cmd("czf", "-", "-C", work, "fm"), "fm")
        assert ds["format"] == "idx" and ds["format_guessed"] and ds["stats"]["train_images"] == 50
        same(ds, fm)
        ds = upload(zip_of(boxes, "boxes"), "boxes")
        assert (ds["format"], ds["type"]) == ("kitti", "object_detection"), ds
        assert ds["stats"]["images"] == 6, ds
        same(ds, boxes)
        # a KITTI set whose only folder is train/: train/ is the layout's, never stripped
        ksplit = os.path.join(work, "ksplit")
        write_kitti(os.path.join(ksplit, "train"), images=4, size=32)
        ds = upload(tar_cmd("cf", "-", "-C", ksplit, "."), "ksplit")
        assert ds["format"] == "kitti" and ds["stats"]["train_images"] == 4, ds

        # server-side paths: the same guess, and the CLI-free API sees format_guessed
        for src, fmt in ((pets, "image_folder"), (fm, "idx"), (boxes, "kitti")):
            ds = c.ok("POST", "/api/v1/datasets", {"name": fmt, "path": src}, want=(201,))
            assert ds["format"] == fmt and ds["format_guessed"] is True, ds
        ds = c.ok("POST", "/api/v1/datasets", {"name": "given", "path": fm, "format": "idx"},
                  want=(201,))
        assert ds["format_guessed"] is False, ds
        # a format without a type takes the format's type
        ds = c.ok("POST", "/api/v1/datasets", {"name": "k", "path": boxes, "format": "kitti"},
                  want=(201,))
        assert ds["type"] == "object_detection" and ds["format_guessed"] is False, ds

        n_rows = len(c.ok("GET", "/api/v1/datasets?limit=500")["datasets"])
        n_dirs = sorted(os.listdir(dsdir))

        def refused(status, js, field, *want):
            assert status == 422, (status, js)
            assert js["error"]["field"] == field, js
            for w in want:
                assert w in js["error"]["message"], (w, js)
            assert ".upload-" not in js["error"]["message"], js  # the archive's names only
            assert len(c.ok("GET", "/api/v1/datasets?limit=500")["datasets"]) == n_rows
            assert sorted(os.listdir(dsdir)) == n_dirs, os.listdir(dsdir)

        def up_refused(body, field, *want, query="&format=image_folder"):
            st, js = c.req("POST", "/api/v1/datasets:upload?name=bad" + query, raw=body,
                           headers=BIN)
            refused(st, js, field, *want)

        # a folder of datasets, one level too deep: the entry named, and the fix
        up_refused(tar_cmd("cf", "-", "-C", d, "work/pets"), "archive",
                   "work/pets/class0: a folder inside a class folder", "tar -C set .",
                   "tar cf set.tar set")
        # no shape known: 422 naming format, with what was seen and the fix
        odd = os.path.join(d, "odd")
        os.makedirs(os.path.join(odd, "notes"))
        open(os.path.join(odd, "readme.txt"), "w").write("hi")
        open(os.path.join(odd, "notes", "a.txt"), "w").write("hi")
        up_refused(tar_cmd("cf", "-", "-C", odd, "."), "format", "readme.txt", "notes/",
                   "give format", query="")
        st, js = c.req("POST", "/api/v1/datasets", {"name": "odd", "path": work})
        refused(st, js, "format", "none could be guessed", "give format")
        # a guess that does not fit the type given
        up_refused(tar_cmd("cf", "-", "-C", work, "pets"), "format", "looks like image_folder",
                   "object_detection", query="&type=object_detection")
        # a gzip bomb: refused after 36 MiB inflated (the 1000x bound)
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
        bomb = b"".join(co.compress(b"\0" * (1 << 20)) for _ in range(256)) + co.flush()
        up_refused(bomb, "archive", "decompression bomb")
        # a gzip that holds no tar; a bzip2 archive
        up_refused(gzip.compress(b"hello" * 100), "archive", "holds no tar")
        up_refused(b"BZh91AY&SY" + b"\0" * 600, "archive", "bzip2", "tar czf")
        # zips: '..', absolute, a symlink, a zip bomb (declared), a corrupt entry
        def zip_entries(entries):
            bio = io.BytesIO()
            with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED) as z:
                for zi, data in entries:
                    z.writestr(zi, data)
            return bio.getvalue()

        up_refused(zip_entries([("../evil.png", b"x")]), "archive", "../evil.png", "'..'")
        up_refused(zip_entries([("/etc/evil", b"x")]), "archive", "absolute")
        link = zipfile.ZipInfo("pets/link.png")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        up_refused(zip_entries([(link, b"/etc/passwd")]), "archive", "pets/link.png",
                   "symbolic link")
        up_refused(zip_entries([("big.png", b"\0" * (256 << 20))]), "archive", "big.png",
                   "decompression bomb")
        good = bytearray(zip_entries([("a/x.png", b"abc" * 1000)]))
        good[45] ^= 0xff  # inside the deflate data of the one entry
        up_refused(bytes(good), "archive", "a/x.png")
        up_refused(zip_entries([("a/x.png", b"1"), ("a/x.png", b"2")]), "archive", "twice")
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
