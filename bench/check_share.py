#!/usr/bin/env python3
"""Another user's small file read while four users' dataset checks inflate (issue 26 item 7 and the
thread-pool share), against a real hone-controller (run by hand).

Starts the controller given (a Release build) with an admin key and a data root, makes a small IDX
dataset (the admin's) and one slow one: valid IDX files whose two image files inflate to --mb MiB each
(sparse noise, within the 2 GB limit and the inflate-ratio cap, so old and new controllers check the
same work). Then N users (alice, bob, ...) each register the slow dataset at once
(POST /api/v1/datasets), while the admin reads a small file of the small dataset
(GET /api/v1/datasets/{id}/files/train-labels-idx1-ubyte.gz, answered on libuv's thread pool) on a
kept-alive connection, one read after the other, until every check is answered. Prints one JSON line:

  {"checks": 4, "mb_each": 4000, "check_s": [...], "reads": ..., "read_p50_ms": ...,
   "read_p99_ms": ..., "read_worst_ms": ..., "all_checks_s": ...}

Goal: read_worst_ms under 1000. The old controller ran checks on libuv's four pool threads, so the
read waited for a check to end. Stdlib only.

  python3 bench/check_share.py build-rel/controller/hone-controller [--checks 4] [--mb 2000]
"""
import argparse
import gzip
import http.client
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib

ADMIN = "bench-admin-key-0123456789"


def gz_member(data):
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def write_small(folder, n=50):
    os.makedirs(folder, exist_ok=True)
    for split, k in (("train", n), ("t10k", n // 2)):
        with gzip.open(os.path.join(folder, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, k, 8, 8) + bytes(k * 64))
        with gzip.open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, k) + bytes(i % 10 for i in range(k)))


def write_slow(folder, mb):
    """Images of n x 1024 x 1024 bytes (n = mb), the same file for train and t10k."""
    os.makedirs(folder, exist_ok=True)
    chunk = bytearray(64 << 20)
    chunk[::256] = os.urandom(len(chunk) // 256)
    member = gz_member(bytes(chunk))
    total = mb << 20
    images = os.path.join(folder, "train-images-idx3-ubyte.gz")
    with open(images, "wb") as f:
        f.write(gz_member(struct.pack(">IIII", 0x803, mb, 1024, 1024)))
        for _ in range(total // len(chunk)):
            f.write(member)
        f.write(gz_member(bytes(chunk[:total % len(chunk)])))
    os.link(images, os.path.join(folder, "t10k-images-idx3-ubyte.gz"))
    for split in ("train", "t10k"):
        with open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(gz_member(struct.pack(">II", 0x801, mb) + bytes(i % 10 for i in range(mb))))


class Api:
    def __init__(self, port):
        self.port = port

    def call(self, method, path, body=None, token=ADMIN, timeout=600):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Authorization": "Bearer " + token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        payload = r.read()
        c.close()
        if r.status >= 300:
            raise RuntimeError("%s %s -> %d %s" % (method, path, r.status, payload[:300]))
        return json.loads(payload) if payload else None


def start(binary, d):
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\ndata_roots: [\"%s\"]\nlog_format: text\n" % (ADMIN, d))
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "controller.log"), "w")
    p = subprocess.Popen([binary, "--config", cfg, "--data-dir", os.path.join(d, "data"),
                          "--listen", "127.0.0.1:0", "--port-file", port_file],
                         stdout=log, stderr=log)
    deadline = time.time() + 30
    while not os.path.exists(port_file):
        if p.poll() is not None or time.time() > deadline:
            raise RuntimeError("controller did not start: see %s" % log.name)
        time.sleep(0.05)
    return p, int(open(port_file).read())


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("controller")
    ap.add_argument("--checks", type=int, default=4)
    ap.add_argument("--mb", type=int, default=2000, help="each image file, MiB (at most 2048)")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="hone-bench-share-")
    p = None
    try:
        small, slow = os.path.join(d, "small"), os.path.join(d, "slow")
        write_small(small)
        write_slow(slow, a.mb)
        p, port = start(os.path.abspath(a.controller), d)
        api = Api(port)
        ds = api.call("POST", "/api/v1/datasets", {"name": "small", "path": small})
        read = "/api/v1/datasets/%s/files/%s" % (
            ds["id"], urllib.parse.quote("train-labels-idx1-ubyte.gz", safe=""))
        tokens = []
        for i in range(a.checks):
            u = api.call("POST", "/api/v1/users", {"name": "user%d" % i})
            k = api.call("POST", "/api/v1/users/%s/keys" % u["id"])
            tokens.append(api.call("POST", "/api/v1/login", {"key": k["key"]})["token"])
        check_s, errors = [None] * a.checks, []

        def check(i):
            t0 = time.monotonic()
            try:
                api.call("POST", "/api/v1/datasets", {"name": "slow", "path": slow},
                         token=tokens[i])
            except Exception as e:  # reported below
                errors.append(repr(e))
            check_s[i] = round(time.monotonic() - t0, 3)

        threads = [threading.Thread(target=check, args=(i,)) for i in range(a.checks)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        lat = []
        while any(t.is_alive() for t in threads):
            r0 = time.monotonic()
            conn.request("GET", read, headers={"Authorization": "Bearer " + ADMIN})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError("read -> %d" % r.status)
            lat.append((time.monotonic() - r0) * 1000)
            time.sleep(0.01)
        all_s = time.monotonic() - t0
        for t in threads:
            t.join()
        conn.close()
        print(json.dumps({
            "checks": a.checks, "mb_each": 2 * a.mb, "check_s": check_s, "check_errors": errors,
            "reads": len(lat), "read_p50_ms": round(pct(lat, 0.5), 1),
            "read_p99_ms": round(pct(lat, 0.99), 1), "read_worst_ms": round(max(lat), 1),
            "all_checks_s": round(all_s, 2)}))
    finally:
        if p:
            p.terminate()
            p.wait(30)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
