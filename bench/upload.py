#!/usr/bin/env python3
"""Concurrent artifact uploads against a real hone-controller: memory and loop stalls (run by hand).

Starts the controller given (a Release build, not a sanitized one), registers one worker per upload,
creates and leases that many train jobs, then sends N concurrent PUTs of SIZE MB each
(PUT /api/v1/jobs/{id}/artifacts/model.bin, with the worker's credential) while another thread
GETs /healthz every 10 ms on a kept-alive connection. Polls /proc/<pid>/status (VmRSS) every 5 ms
and reads VmHWM at the end. Prints one JSON line:

  {"uploads": 4, "mb_each": 200, "seconds": ..., "mb_per_s": ..., "rss_before_mb": ...,
   "peak_rss_mb": ..., "hwm_mb": ..., "healthz_worst_ms": ..., "healthz_p99_ms": ...,
   "healthz_n": ...}

The worst /healthz latency stands for the longest loop stall. Stdlib only.

  python3 bench/upload.py build-rel/controller/hone-controller [--uploads 4] [--mb 200]
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

    def call(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = dict(headers or {})
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


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("controller")
    ap.add_argument("--uploads", type=int, default=4)
    ap.add_argument("--mb", type=int, default=200, help="size of each upload, in MB (10^6 bytes)")
    ap.add_argument("--ping-ms", type=float, default=10.0)
    ap.add_argument("--data-dir", help="default: a temp folder, removed afterwards")
    ap.add_argument("--label", default="", help="copied into the JSON line")
    a = ap.parse_args()

    d = a.data_dir or tempfile.mkdtemp(prefix="hone-bench-upload-")
    os.makedirs(d, exist_ok=True)
    write_idx(os.path.join(d, "idx"))
    size = a.mb * 1000 * 1000
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("limits: {upload_bytes: %d}\nlog_format: json\n" % (size + (1 << 20)))
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "controller.log"), "wb")
    proc = subprocess.Popen([os.path.abspath(a.controller), "--listen", "127.0.0.1:0",
                             "--data-dir", d, "--port-file", port_file, "--config", cfg],
                            stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("controller did not start; see %s/controller.log" % d)
            time.sleep(0.02)
        api = Api(int(open(port_file).read()))
        ds = api.call("POST", "/api/v1/datasets", {"name": "b", "path": os.path.join(d, "idx")})
        exp = api.call("POST", "/api/v1/experiments", {"name": "b", "network_arch": "mlp",
                                                      "train_datasets": [ds["id"]]})
        leased = []
        for i in range(a.uploads):
            api.call("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        for i in range(a.uploads):
            w = api.call("POST", "/api/v1/workers", {"name": "bench%d" % i})
            h = {"Authorization": "Bearer " + w["token"]}
            job = api.call("POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], headers=h)["job"]
            leased.append((job["id"], h))
        body = os.urandom(1 << 20) * a.mb  # close enough to MB; the size sent is len(body)
        body = body[:size]

        stop = threading.Event()
        rss_peak = [0]
        lat = []

        def watch_rss():
            while not stop.is_set():
                rss_peak[0] = max(rss_peak[0], status_kb(proc.pid, "VmRSS"))
                time.sleep(0.005)

        def ping():
            c = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
            while not stop.is_set():
                t = time.perf_counter()
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                lat.append(time.perf_counter() - t)
                time.sleep(a.ping_ms / 1000.0)
            c.close()

        results = [None] * a.uploads

        def upload(i):
            job, h = leased[i]
            c = http.client.HTTPConnection("127.0.0.1", api.port, timeout=600)
            c.request("PUT", "/api/v1/jobs/%s/artifacts/model.bin" % job, body=body,
                      headers=dict(h, **{"Content-Type": "application/octet-stream"}))
            r = c.getresponse()
            results[i] = (r.status, r.read())
            c.close()

        rss_before = status_kb(proc.pid, "VmRSS")
        watchers = [threading.Thread(target=watch_rss), threading.Thread(target=ping)]
        for t in watchers:
            t.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        ups = [threading.Thread(target=upload, args=(i,)) for i in range(a.uploads)]
        for t in ups:
            t.start()
        for t in ups:
            t.join()
        seconds = time.perf_counter() - t0
        time.sleep(0.2)
        stop.set()
        for t in watchers:
            t.join()
        hwm = status_kb(proc.pid, "VmHWM")
        bad = [r for r in results if not r or r[0] != 201]
        if bad:
            raise RuntimeError("uploads failed: %s" % bad[:2])
        for job, _ in leased:
            got = os.path.getsize(os.path.join(d, "artifacts", job, "model.bin"))
            if got != size:
                raise RuntimeError("job %s: %d bytes stored, %d sent" % (job, got, size))
        lat.sort()
        out = {"uploads": a.uploads, "mb_each": a.mb, "seconds": round(seconds, 3),
               "mb_per_s": round(a.uploads * size / 1e6 / seconds, 1),
               "rss_before_mb": round(rss_before / 1024, 1),
               "peak_rss_mb": round(rss_peak[0] / 1024, 1), "hwm_mb": round(hwm / 1024, 1),
               "healthz_worst_ms": round(lat[-1] * 1000, 2),
               "healthz_p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 2),
               "healthz_n": len(lat)}
        if a.label:
            out["label"] = a.label
        print(json.dumps(out))
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        log.close()
        if not a.data_dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
