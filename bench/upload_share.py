#!/usr/bin/env python3
"""A worker's upload while one user holds slow uploads, against a real hone-controller (run by hand;
issue 26, item 5).

Starts the controller given with auth on (limits.uploads, default 4), makes users alice and bob,
and a worker that leases one of bob's train jobs. Alice opens --slow dataset uploads (default 4,
every slot before shares) announcing 100 MB each and trickles 70 KiB into each every 20 s, as
in the issue. Then the worker PUTs a 1 KiB checkpoint.bin --samples times, one after another, each
timed (a PUT not answered in --timeout seconds counts as that many and ends the run), and bob
opens one dataset upload, timed to its 100 Continue (its slot). Prints one JSON line:

  {"slots": 4, "alice_uploads": 4, "alice_slots": ..., "worker_put_ms_median": ...,
   "worker_put_ms_max": ..., "worker_timeouts": 0, "bob_slot_ms": ...}

alice_slots: how many of her uploads got a slot (100 Continue) within 1 s. Goal: the worker's
PUTs under 1 s (they have slots of their own), bob gets a slot. Stdlib only.

  python3 bench/upload_share.py build-rel/controller/hone-controller [--slow 4] [--samples 20]
"""
import argparse
import gzip
import http.client
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time

ADMIN = "bench-admin-key-0123456789"
ENROL = "bench-enrol-0123456789"
UP = "/api/v1/datasets:upload?name=slow&type=image_classification&format=idx"


def write_idx(folder, n=50):
    os.makedirs(folder, exist_ok=True)
    for split, k in (("train", n), ("t10k", n // 2)):
        with gzip.open(os.path.join(folder, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, k, 8, 8) + bytes(k * 64))
        with gzip.open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, k) + bytes(i % 10 for i in range(k)))


class Api:
    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, tok=ADMIN):
        h = {"Authorization": "Bearer " + tok}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        payload = r.read()
        if r.status >= 300:
            raise RuntimeError("%s %s -> %d %s" % (method, path, r.status, payload[:300]))
        return json.loads(payload) if payload else None


def user(api, d, name):
    u = api.call("POST", "/api/v1/users", {"name": name})
    key = api.call("POST", "/api/v1/users/%s/keys" % u["id"])["key"]
    tok = api.call("POST", "/api/v1/login", {"key": key})["token"]
    write_idx(os.path.join(d, name))
    ds = api.call("POST", "/api/v1/datasets", {"name": name, "path": os.path.join(d, name)}, tok)
    exp = api.call("POST", "/api/v1/experiments", {"name": name, "network_arch": "mlp",
                                                   "train_datasets": [ds["id"]]}, tok)
    return tok, exp["id"]


def slow_upload(port, tok):
    """The headers of a 100 MB dataset upload (Expect: 100-continue); the body comes later."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/x-tar\r\nContent-Length: 100000000\r\n"
               "Expect: 100-continue\r\n\r\n" % (UP, tok)).encode())
    return s


def got_slot(s, within):
    s.settimeout(within)
    try:
        return s.recv(4096).startswith(b"HTTP/1.1 100")
    except socket.timeout:
        return False
    finally:
        s.settimeout(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("controller")
    ap.add_argument("--slow", type=int, default=4, help="alice's slow uploads")
    ap.add_argument("--slots", type=int, default=4, help="limits.uploads")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--label", default="", help="copied into the JSON line")
    a = ap.parse_args()

    d = tempfile.mkdtemp(prefix="hone-bench-upshare-")
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s, worker_token: %s}\ndata_roots: [\"%s\"]\n"
                "limits: {uploads: %d}\nlog_format: json\n" % (ADMIN, ENROL, d, a.slots))
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "controller.log"), "wb")
    proc = subprocess.Popen([os.path.abspath(a.controller), "--listen", "127.0.0.1:0",
                             "--data-dir", os.path.join(d, "data"), "--port-file", port_file,
                             "--config", cfg], stdout=log, stderr=log)
    stop = threading.Event()
    held = []
    try:
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("controller did not start; see %s/controller.log" % d)
            time.sleep(0.02)
        port = int(open(port_file).read())
        api = Api(port)
        ta, _ = user(api, d, "alice")
        tb, eb = user(api, d, "bob")
        api.call("POST", "/api/v1/experiments/%s/jobs" % eb, {"action": "train"}, tb)
        w = api.call("POST", "/api/v1/workers", {"name": "w"}, ENROL)
        job = api.call("POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], None,
                       w["token"])["job"]["id"]

        held = [slow_upload(port, ta) for _ in range(a.slow)]
        alice_slots = sum(got_slot(s, 1.0) for s in held)

        def trickle():  # 70 KiB into each every 20 s: enough to keep a slot
            chunk = b"\0" * (70 << 10)
            while not stop.wait(0.0):
                for s in held:
                    try:
                        s.sendall(chunk)
                    except OSError:
                        pass
                if stop.wait(20):
                    return

        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        put_s, timeouts = [], 0
        for _ in range(a.samples):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=a.timeout)
            t0 = time.perf_counter()
            try:
                c.request("PUT", "/api/v1/jobs/%s/artifacts/checkpoint.bin" % job,
                          body=os.urandom(1024),
                          headers={"Authorization": "Bearer " + w["token"],
                                   "Content-Type": "application/octet-stream"})
                r = c.getresponse()
                r.read()
                if r.status != 201:
                    raise RuntimeError("worker PUT -> %d" % r.status)
                put_s.append(time.perf_counter() - t0)
            except socket.timeout:
                put_s.append(a.timeout)
                timeouts += 1
                break
            finally:
                c.close()
        t0 = time.perf_counter()
        b = slow_upload(port, tb)
        bob_ms = round((time.perf_counter() - t0) * 1000, 2) if got_slot(b, 5.0) else None
        b.close()
        out = {"slots": a.slots, "alice_uploads": a.slow, "alice_slots": alice_slots,
               "worker_put_ms_median": round(statistics.median(put_s) * 1000, 2),
               "worker_put_ms_max": round(max(put_s) * 1000, 2), "worker_puts": len(put_s),
               "worker_timeouts": timeouts, "bob_slot_ms": bob_ms}
        if a.label:
            out["label"] = a.label
        print(json.dumps(out))
    finally:
        stop.set()
        for s in held:
            s.close()
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
