"""Dataset checks bounded like the trainer (issue 26 item 7) against a real hone-controller: an IDX
file is held to hone-train's limits (data/data.h: HONE_DATA_IDX_MAX_BYTES, 2 GiB of data a file, and
HONE_DATA_IDX_MAX_RATIO, a gzip file inflating at most 1000 times its size, checked while
inflating). A gzip IDX whose header announces 3 GiB, and a gzip bomb of 1 GiB of zeros inside the
size limit, are refused with 422 naming the file, uploaded (field `archive`) or registered from a
data root (field `path`), and nothing is stored: no dataset row, no folder left under datasets/.
A FIFO in place of an IDX file (it would block a check thread for good) is refused the same way.
A normal IDX is still accepted both ways. (The old controller accepted both files: it allowed
8 GiB and inflated whatever came.)"""
import gzip
import io
import os
import struct
import sys
import tarfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

URL = "/api/v1/datasets:upload?name=%s&type=image_classification&format=idx"
TAR = {"Content-Type": "application/x-tar"}


def gz_member(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)  # one gzip member
    return c.compress(data) + c.flush()


def zeros_gz(header, total):
    """header then total zero bytes, as concatenated gzip members (zlib reads them as one stream):
    one 64 MiB member repeated, so making a 3 GiB file costs one compression."""
    chunk = 64 << 20
    member = gz_member(bytes(chunk))
    out = [gz_member(header)]
    left = total
    while left >= chunk:
        out.append(member)
        left -= chunk
    if left:
        out.append(gz_member(bytes(left)))
    return b"".join(out)


def write_bomb(folder, n, side=1024):
    """An IDX dataset that is well formed: train has n zero images of side x side (its labels
    match), t10k one image. Inflating train is the whole cost."""
    os.makedirs(folder, exist_ok=True)
    files = {
        "train-images-idx3-ubyte.gz": zeros_gz(struct.pack(">IIII", 0x803, n, side, side),
                                               n * side * side),
        "train-labels-idx1-ubyte.gz": gzip.compress(struct.pack(">II", 0x801, n) + bytes(n)),
        "t10k-images-idx3-ubyte.gz": gzip.compress(struct.pack(">IIII", 0x803, 1, side, side) +
                                                   bytes(range(256)) * (side * side // 256)),
        "t10k-labels-idx1-ubyte.gz": gzip.compress(struct.pack(">II", 0x801, 1) + b"\x01"),
    }
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def tar_dir(src):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for f in sorted(os.listdir(src)):
            data = open(os.path.join(src, f), "rb").read()
            ti = tarfile.TarInfo(f)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def main():
    binary = binary_from_argv()
    d = tempdir()
    data = os.path.join(d, "data")
    root = os.path.join(d, "root")
    os.makedirs(data)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("limits: {upload_bytes: 33554432}\ndata_roots: [%s]\nlog_format: json\n" % root)
    good, big, bomb = (os.path.join(root, n) for n in ("good", "big", "bomb"))
    write_idx(good)
    write_bomb(big, 3072)  # 3 GiB of data announced (and held): past the 2 GiB limit
    write_bomb(bomb, 1000)  # 1e9 zero bytes, about 1 MB of gzip: within the limit, a bomb
    c = Controller(binary, data, config=cfg).start()
    dsdir = os.path.join(data, "datasets")
    try:
        ok = c.ok("POST", "/api/v1/datasets", {"name": "good", "path": good}, want=(201,))
        assert ok["stats"]["train_images"] == 50, ok
        up = c.ok("POST", URL % "good-up", raw=tar_dir(good), headers=TAR, want=(201,))
        assert up["stats"]["train_images"] == 50, up
        rows = c.ok("GET", "/api/v1/datasets")["datasets"]
        dirs = sorted(os.listdir(dsdir))
        for folder, want in ((big, "3221225472 data bytes, more than the 2147483648"),
                             (bomb, "inflates more than 1000 times")):
            t0 = time.monotonic()
            st, js = c.req("POST", "/api/v1/datasets", {"name": "x", "path": folder})
            took = time.monotonic() - t0
            assert st == 422 and js["error"]["field"] == "path", (st, js)
            msg = js["error"]["message"]
            assert "train-images-idx3-ubyte.gz" in msg and want in msg, msg
            assert took < 30, took  # sanity only: the bounds stop it in a fraction of that
            st, js = c.req("POST", URL % "x", raw=tar_dir(folder), headers=TAR)
            assert st == 422 and js["error"]["field"] == "archive", (st, js)
            msg = js["error"]["message"]
            assert "<archive>/train-images-idx3-ubyte.gz" in msg and want in msg, msg
            # nothing stored: no row, no folder (nor a hidden temp one) under datasets/
            assert c.ok("GET", "/api/v1/datasets")["datasets"] == rows
            assert sorted(os.listdir(dsdir)) == dirs, (os.listdir(dsdir), dirs)
        # a FIFO in place of a file would hold a check thread for good: refused at once
        fifo = os.path.join(root, "fifo")
        write_idx(fifo)
        os.unlink(os.path.join(fifo, "train-images-idx3-ubyte.gz"))
        os.mkfifo(os.path.join(fifo, "train-images-idx3-ubyte.gz"))
        st, js = c.req("POST", "/api/v1/datasets", {"name": "x", "path": fifo}, timeout=30)
        assert st == 422 and js["error"]["field"] == "path", (st, js)
        assert "train-images-idx3-ubyte.gz: not a regular file" in js["error"]["message"], js
        assert c.ok("GET", "/api/v1/datasets")["datasets"] == rows
        # a good dataset still goes through after the refusals
        c.ok("POST", "/api/v1/datasets", {"name": "good2", "path": good}, want=(201,))
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
