#!/usr/bin/env python3
"""Concurrent artifact downloads from a real hone-controller: memory, loop stalls, throughput (run
by hand).

Starts the controller given (a Release build, not a sanitized one; tests/lib/honeproc.py starts
it), creates a train job, plants a SIZE MB artifact in <data_dir>/artifacts/<job>/ (random bytes,
or a sparse file with --sparse), then runs N parallel full downloads
(GET /api/v1/jobs/{id}/artifacts/model.bin, each read to its end and its length checked) while
another thread GETs /healthz every 10 ms on a kept-alive connection and a third polls
/proc/<pid>/status (VmRSS) every 5 ms. Prints one JSON line:

  {"downloads": 6, "mb_each": 200, "seconds": ..., "mb_per_s": ..., "rss_before_mb": ...,
   "peak_rss_mb": ..., "healthz_p50_ms": ..., "healthz_p99_ms": ..., "healthz_worst_ms": ...,
   "healthz_n": ...}

Goals (issue 26): peak RSS under 100 MB, /healthz p99 under 50 ms. Stdlib only.

  python3 bench/download.py build-rel/controller/hone-controller [--downloads 6] [--mb 200]
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from honeproc import ControllerProcess  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from upload import Api, status_kb, write_idx  # noqa: E402


def pct(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, int(len(sorted_vals) * q))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("controller")
    ap.add_argument("--downloads", type=int, default=6)
    ap.add_argument("--mb", type=int, default=200, help="artifact size in MiB")
    ap.add_argument("--sparse", action="store_true", help="a sparse file (reads as zeros)")
    ap.add_argument("--ping-ms", type=float, default=10.0)
    ap.add_argument("--data-dir", help="default: a temp folder, removed afterwards")
    ap.add_argument("--label", default="", help="copied into the JSON line")
    a = ap.parse_args()

    d = a.data_dir or tempfile.mkdtemp(prefix="hone-bench-download-")
    os.makedirs(d, exist_ok=True)
    write_idx(os.path.join(d, "idx"))
    size = a.mb << 20
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [\"%s\"]\nlog_format: json\n" % d)
    ctl = ControllerProcess(os.path.abspath(a.controller), os.path.join(d, "data"), config=cfg)
    ctl.start()
    try:
        api = Api(ctl.port)
        ds = api.call("POST", "/api/v1/datasets", {"name": "b", "path": os.path.join(d, "idx")})
        exp = api.call("POST", "/api/v1/experiments", {"name": "b", "network_arch": "mlp",
                                                      "train_datasets": [ds["id"]]})
        job = api.call("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        folder = os.path.join(d, "data", "artifacts", job["id"])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.bin"), "wb") as f:
            if a.sparse:
                f.truncate(size)
            else:
                block = os.urandom(1 << 20)
                for _ in range(a.mb):
                    f.write(block)
        url = "/api/v1/jobs/%s/artifacts/model.bin" % job["id"]

        stop = threading.Event()
        rss_peak = [0]
        lat = []

        def watch_rss():
            while not stop.is_set():
                rss_peak[0] = max(rss_peak[0], status_kb(ctl.proc.pid, "VmRSS"))
                time.sleep(0.005)

        def ping():
            c = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=120)
            while not stop.is_set():
                t = time.perf_counter()
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                lat.append(time.perf_counter() - t)
                time.sleep(a.ping_ms / 1000.0)
            c.close()

        results = [None] * a.downloads

        def download(i):
            c = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=600)
            c.request("GET", url)
            r = c.getresponse()
            n = 0
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                n += len(b)
            results[i] = (r.status, n)
            c.close()

        rss_before = status_kb(ctl.proc.pid, "VmRSS")
        watchers = [threading.Thread(target=watch_rss), threading.Thread(target=ping)]
        for t in watchers:
            t.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        dls = [threading.Thread(target=download, args=(i,)) for i in range(a.downloads)]
        for t in dls:
            t.start()
        for t in dls:
            t.join()
        seconds = time.perf_counter() - t0
        time.sleep(0.2)
        stop.set()
        for t in watchers:
            t.join()
        bad = [r for r in results if not r or r != (200, size)]
        if bad:
            raise RuntimeError("downloads failed: %s" % bad[:2])
        lat.sort()
        out = {"downloads": a.downloads, "mb_each": a.mb, "sparse": a.sparse,
               "seconds": round(seconds, 3),
               "mb_per_s": round(a.downloads * size / 1e6 / seconds, 1),
               "rss_before_mb": round(rss_before / 1024, 1),
               "peak_rss_mb": round(rss_peak[0] / 1024, 1),
               "healthz_p50_ms": round(pct(lat, 0.50) * 1000, 2),
               "healthz_p99_ms": round(pct(lat, 0.99) * 1000, 2),
               "healthz_worst_ms": round(lat[-1] * 1000, 2), "healthz_n": len(lat)}
        if a.label:
            out["label"] = a.label
        print(json.dumps(out))
    finally:
        ctl.stop()
        if not a.data_dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
