"""Dataset upload as a tar body (POST /api/v1/datasets:upload) against a real hone-controller: a good
IDX archive is stored under <data_dir>/datasets/<id> with its stats, and so is a KITTI set
(type object_detection, format kitti: its boxes and classes in the stats); every hostile archive ('..',
absolute names, backslashes, NUL bytes, links, devices, fifos, sparse and pax entries, bad checksums,
truncation, size bombs, too many files, duplicates) is a 4xx naming `archive` and stores nothing."""
import io
import os
import struct
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pngfolder import write_kitti  # noqa: E402

URL = "/api/v1/datasets:upload?name=%s&type=image_classification&format=idx"
TAR = {"Content-Type": "application/x-tar"}


def tar_of(members, fmt=tarfile.USTAR_FORMAT):
    """members: list of (TarInfo, bytes or None)."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=fmt) as t:
        for ti, data in members:
            if data is not None:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                t.addfile(ti)
    return bio.getvalue()


def info(name, kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = link
    return ti


def raw_header(name, size, kind=b"0", data=b""):
    """A ustar header built by hand (names with NUL bytes, sizes that lie, odd types)."""
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"00000000000\0"
    h[148:156] = b" " * 8
    h[156:157] = kind
    h[257:265] = b"ustar\x0000"
    h[148:156] = b"%06o\0 " % sum(h)
    pad = (-len(data)) % 512
    return bytes(h) + data + b"\0" * pad


def end():
    return b"\0" * 1024


def good_tar(src):
    members = []
    for f in sorted(os.listdir(src)):
        members.append((info(f), open(os.path.join(src, f), "rb").read()))
    return tar_of(members)


def main():
    binary = binary_from_argv()
    d = tempdir()
    src = os.path.join(d, "src")
    write_idx(src)
    data = os.path.join(d, "data")
    os.makedirs(data)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("limits: {upload_bytes: 8388608}\nlog_format: json\n")
    c = Controller(binary, data, config=cfg).start()
    dsdir = os.path.join(data, "datasets")
    try:
        good = good_tar(src)
        ds = c.ok("POST", URL % "fm", raw=good, headers=TAR, want=(201,))
        assert ds["stats"]["train_images"] == 50 and ds["stats"]["test_images"] == 20, ds
        assert ds["path"] == os.path.realpath(os.path.join(dsdir, ds["id"])), ds
        for f in os.listdir(src):
            assert open(os.path.join(ds["path"], f), "rb").read() == \
                open(os.path.join(src, f), "rb").read(), f
        assert c.ok("GET", "/api/v1/datasets/" + ds["id"])["stats"] == ds["stats"]
        # a folder prefix "./" and explicit folders are fine
        sub = tar_of([(info("./", tarfile.DIRTYPE), None), (info("./sub", tarfile.DIRTYPE), None),
                      (info("./sub/readme.txt"), b"hi")] +
                     [(info("./" + f), open(os.path.join(src, f), "rb").read())
                      for f in sorted(os.listdir(src))])
        ds2 = c.ok("POST", URL % "fm2", raw=sub, headers=TAR, want=(201,))
        assert open(os.path.join(ds2["path"], "sub", "readme.txt"), "rb").read() == b"hi"

        # a KITTI set: images/ and labels/, checked as a server-side one (the classes found)
        ksrc = os.path.join(d, "kitti")
        nboxes = write_kitti(ksrc, images=6, size=32, classes=("dog", "cat"))
        ktar = tar_of([(info("%s/%s" % (sub, f)), open(os.path.join(ksrc, sub, f), "rb").read())
                       for sub in ("images", "labels")
                       for f in sorted(os.listdir(os.path.join(ksrc, sub)))])
        kurl = "/api/v1/datasets:upload?name=det&type=object_detection&format=kitti"
        kd = c.ok("POST", kurl, raw=ktar, headers=TAR, want=(201,))
        assert kd["type"] == "object_detection" and kd["format"] == "kitti", kd
        assert kd["stats"]["images"] == 6 and kd["stats"]["boxes"] == nboxes, kd
        assert kd["stats"]["class_names"] == ["cat", "dog"], kd
        assert open(os.path.join(kd["path"], "labels", "3.txt")).read() == \
            open(os.path.join(ksrc, "labels", "3.txt")).read()
        # a label naming a box outside its image: refused with the file and line named
        broken = tar_of([(info("images/0.png"), open(os.path.join(ksrc, "images", "0.png"),
                                                     "rb").read()),
                         (info("labels/0.txt"), b"dog 0 0 0 5 5 40 40 0 0 0 0 0 0 0\n")])
        st, js = c.req("POST", kurl.replace("=det", "=broken"), raw=broken, headers=TAR)
        assert st == 422 and "labels/0.txt:1" in js["error"]["message"], (st, js)

        n_rows = len(c.ok("GET", "/api/v1/datasets")["datasets"])
        n_dirs = sorted(os.listdir(dsdir))

        def refused(body, status=422, field="archive", want=None, headers=TAR, url=URL % "bad"):
            st, js = c.req("POST", url, raw=body, headers=headers)
            assert st == status, (st, js, want)
            if field:
                assert js["error"]["field"] == field, js
            if want:
                assert want in js["error"]["message"], (want, js)
            assert len(c.ok("GET", "/api/v1/datasets")["datasets"]) == n_rows, "row stored"
            assert sorted(os.listdir(dsdir)) == n_dirs, ("folder left", os.listdir(dsdir))

        idx = open(os.path.join(src, "train-labels-idx1-ubyte.gz"), "rb").read()
        refused(tar_of([(info("../evil"), b"x")]), want="'..'")
        refused(tar_of([(info("a/../../evil"), b"x")]), want="'..'")
        refused(tar_of([(info("/etc/evil"), b"x")]), want="absolute")
        refused(tar_of([(info("a\\..\\evil"), b"x")]), want="backslash")
        refused(raw_header(b"ok\0../../evil", 1, data=b"x") + end(), want="NUL")
        refused(tar_of([(info("l", tarfile.SYMTYPE, "/etc/passwd"), None)]), want="link")
        refused(tar_of([(info("h", tarfile.LNKTYPE, "x"), None)]), want="link")
        refused(tar_of([(info("dev", tarfile.CHRTYPE), None)]), want="device")
        refused(tar_of([(info("blk", tarfile.BLKTYPE), None)]), want="device")
        refused(tar_of([(info("fifo", tarfile.FIFOTYPE), None)]), want="fifo")
        refused(raw_header(b"sparse", 0, kind=b"S") + end(), want="sparse")
        # (pax and GNU long names are read since issue 30, what Python's tarfile and GNU tar
        # write for long paths: a name part past 255 bytes is still refused)
        refused(tar_of([(info("x" * 300), b"x")], fmt=tarfile.PAX_FORMAT), want="255 bytes")
        refused(tar_of([(info("x" * 300), b"x")], fmt=tarfile.GNU_FORMAT), want="255 bytes")
        refused(tar_of([(info("a/" + "x" * 1100), b"x")], fmt=tarfile.PAX_FORMAT), want="longer")
        refused(raw_header(b"././@LongLink", 3, kind=b"L", data=b"abc") + end(), want="no entry")
        pax_size = b"20 size=99999999999\n"
        refused(raw_header(b"pax", len(pax_size), kind=b"x", data=pax_size) +
                raw_header(b"f", 1, data=b"x") + end(), want="pax size")
        refused(raw_header(b"pax", 9, kind=b"x", data=b"9 pa=b\n\0\0") +
                raw_header(b"f", 1, data=b"x") + end(), want="malformed pax")
        pax_dd = b"16 path=../evil\n\0\0"
        refused(raw_header(b"pax", len(pax_dd), kind=b"x", data=pax_dd) +
                raw_header(b"f", 1, data=b"x") + end(), want="'..'")
        bad = bytearray(good)
        bad[3] ^= 0x20
        refused(bytes(bad), want="checksum")
        refused(good[:700], want="truncated")
        refused(good[:300], want="truncated")
        refused(good + b"garbage", want="after the end")
        refused(b"not a tar at all" * 64, want="checksum")
        # size bombs: sizes the archive does not hold
        refused(raw_header(b"huge", 2 << 30) + end(), want="limit")
        refused(raw_header(b"bomb", 1 << 20, data=b"x" * 1000) + end(), want="total")
        refused(tar_of([(info("f%05d" % i), b"") for i in range(10001)]), want="entries")
        refused(tar_of([(info("a"), idx), (info("a"), idx)]), want="twice")
        refused(tar_of([(info("./a"), b"1"), (info("a"), b"2")]), want="twice")
        refused(tar_of([(info("a"), b"1"), (info("a/b"), b"2")]), want="file and a folder")
        # a valid archive whose files are not a dataset
        refused(tar_of([(info("train-images-idx3-ubyte"), b"junk")]), want="not found")
        refused(b"", want="empty")
        refused(end(), want="not found")  # an empty archive (once a fuzz finding)
        # request problems
        # (application/octet-stream, gzip and zip are archives too since issue 30: the kind is
        # read from the bytes)
        refused(good, status=415, field="Content-Type", headers={"Content-Type": "text/plain"})
        refused(good, field="name", url="/api/v1/datasets:upload?type=image_classification")
        # (since issue 30 a format without a type takes the format's type: the clash needs both)
        refused(good, field="format",
                url="/api/v1/datasets:upload?name=x&type=image_classification&format=kitti")
        refused(ktar, field="format",
                url="/api/v1/datasets:upload?name=x&type=object_detection&format=image_folder")
        refused(ktar, field="type", url="/api/v1/datasets:upload?name=x&type=segmentation")
        st, _ = c.req("POST", URL % "big", raw=b"\0" * (9 << 20), headers=TAR)
        assert st == 413, st
        assert len(c.ok("GET", "/api/v1/datasets")["datasets"]) == n_rows
        assert sorted(os.listdir(dsdir)) == n_dirs
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
