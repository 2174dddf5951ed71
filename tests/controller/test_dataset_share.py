"""Dataset checks run on threads of their own, fair between users (issue 26: thread-pool work
started by users), against a real hone-controller with `dataset_checks: 1`: while alice's four slow
checks (an IDX of 1 GiB that inflates for a while, registered four times at once) hold the check
thread and its queue, the admin's read of a small dataset file (GET /datasets/{id}/files/{name}, on
libuv's pool) is answered before any of alice's checks, and bob's check, queued after all four of
hers, runs before her second one (a user's second check waits behind other users' first). Every
check is still answered 201. (The old controller ran checks on libuv's four threads: the read
waited for one of alice's checks to end.)"""
import os
import struct
import sys
import threading
import time
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

ADMIN = "share-admin-key-0123456789"


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def gz_member(data, level=1):
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def write_slow(folder, n=2000, side=1024):
    """A valid IDX dataset whose images (train and t10k, n x side x side bytes each: 2 GB, the most a
    file may hold; sparse noise, well under the inflate-ratio cap) take a while to inflate: one
    64 MiB gzip member repeated, the same file for both splits."""
    os.makedirs(folder, exist_ok=True)
    chunk = bytearray(64 << 20)
    chunk[::256] = os.urandom(len(chunk) // 256)
    member = gz_member(bytes(chunk))
    total = n * side * side
    images = os.path.join(folder, "train-images-idx3-ubyte.gz")
    with open(images, "wb") as f:
        f.write(gz_member(struct.pack(">IIII", 0x803, n, side, side)))
        for _ in range(total // len(chunk)):
            f.write(member)
        f.write(gz_member(bytes(chunk[:total % len(chunk)])))
    os.link(images, os.path.join(folder, "t10k-images-idx3-ubyte.gz"))
    for split in ("train", "t10k"):
        with open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(gz_member(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n))))


def main():
    binary = binary_from_argv()
    d = tempdir()
    small, slow = os.path.join(d, "small"), os.path.join(d, "slow")
    write_idx(small)
    write_slow(slow)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\ndata_roots: [\"%s\"]\ndataset_checks: 1\n"
                "log_format: json\n" % (ADMIN, d))
    c = Controller(binary, os.path.join(d, "data"), config=cfg).start()
    adm = bearer(ADMIN)
    done, lock, errors = [], threading.Lock(), []

    def run(who, method, path, body=None, headers=None, want=200):
        try:
            st, js = c.req(method, path, body, headers=headers, timeout=300)
            if st != want:
                errors.append((who, st, js))
        except Exception as e:  # reported by the main thread
            errors.append((who, repr(e)))
        with lock:
            done.append(who)

    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "small", "path": small}, headers=adm)
        read = "/api/v1/datasets/%s/files/%s" % (
            ds["id"], urllib.parse.quote("train-labels-idx1-ubyte.gz", safe=""))
        c.ok("GET", read, headers=adm)
        keys = {}
        for name in ("alice", "bob"):
            u = c.ok("POST", "/api/v1/users", {"name": name}, headers=adm)
            k = c.ok("POST", "/api/v1/users/%s/keys" % u["id"], headers=adm)
            keys[name] = bearer(c.ok("POST", "/api/v1/login", {"key": k["key"]})["token"])
        threads = []
        for i in range(4):
            t = threading.Thread(target=run, args=("alice%d" % i, "POST", "/api/v1/datasets",
                                                   {"name": "slow%d" % i, "path": slow},
                                                   keys["alice"], 201))
            t.start()
            threads.append(t)
        time.sleep(0.1)  # all four sent: one runs (inflating 4 GB), three wait
        run("read", "GET", read, headers=adm)
        # answered while alice's checks held the check thread: none of hers is stored yet (the old
        # controller answered the read only once one of her checks had left libuv's pool, and its
        # row is stored before the read is answered)
        mine = [r for r in c.ok("GET", "/api/v1/datasets", headers=adm)["datasets"]
                if r["name"].startswith("slow")]
        assert done == ["read"] and not mine, (done, mine)
        t = threading.Thread(target=run, args=("bob", "POST", "/api/v1/datasets",
                                               {"name": "bob", "path": small}, keys["bob"], 201))
        t.start()
        threads.append(t)
        for t in threads:
            t.join(300)
        assert not errors, errors
        assert len(done) == 6, done
        alice = [w for w in done if w.startswith("alice")]
        assert done.index("bob") < done.index(alice[1]), done
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
