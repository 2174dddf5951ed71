#!/usr/bin/env python3
"""Fair share of the job queue against a real hone-controller (run by hand; issue 26, item 6).

Starts the controller given with auth on, makes users alice and bob (each a dataset and an
experiment), has alice queue N train jobs and then bob one, and lets W workers lease: each round
every worker leases one job, then completes it (status done, no epochs). Stops once bob's job is
leased. Prints one JSON line:

  {"alice_jobs": 200, "workers": 1, "bob_position": 2, "leases": 2, "lease_ms_median": ...,
   "lease_ms_max": ..., "create_ms_median": ...}

bob_position counts leases from 1 (goal: 2 or less). The lease times are those of POST
/workers/{id}/lease with alice's N jobs queued: the fair-share statement runs on each. Stdlib only.

  python3 bench/fair_queue.py build-rel/controller/hone-controller [--alice 200] [--workers 1]
"""
import argparse
import gzip
import http.client
import json
import os
import shutil
import statistics
import struct
import subprocess
import tempfile
import time

ADMIN = "bench-admin-key-0123456789"
ENROL = "bench-enrol-0123456789"


def write_idx(folder, n=50):
    os.makedirs(folder, exist_ok=True)
    for split, k in (("train", n), ("t10k", n // 2)):
        with gzip.open(os.path.join(folder, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, k, 8, 8) + bytes(k * 64))
        with gzip.open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, k) + bytes(i % 10 for i in range(k)))


class Api:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, tok=ADMIN, want=(200, 201, 204)):
        h = {"Authorization": "Bearer " + tok}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        payload = r.read()
        if r.status not in want:
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("controller")
    ap.add_argument("--alice", type=int, default=200, help="train jobs alice queues first")
    ap.add_argument("--workers", type=int, default=1, help="workers leasing each round")
    ap.add_argument("--label", default="", help="copied into the JSON line")
    a = ap.parse_args()

    d = tempfile.mkdtemp(prefix="hone-bench-fair-")
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s, worker_token: %s}\ndata_roots: [\"%s\"]\n"
                "log_format: json\n" % (ADMIN, ENROL, d))
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "controller.log"), "wb")
    proc = subprocess.Popen([os.path.abspath(a.controller), "--listen", "127.0.0.1:0",
                             "--data-dir", os.path.join(d, "data"), "--port-file", port_file,
                             "--config", cfg], stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("controller did not start; see %s/controller.log" % d)
            time.sleep(0.02)
        api = Api(int(open(port_file).read()))
        ta, ea = user(api, d, "alice")
        tb, eb = user(api, d, "bob")
        create = []
        for _ in range(a.alice):
            t = time.perf_counter()
            api.call("POST", "/api/v1/experiments/%s/jobs" % ea, {"action": "train"}, ta)
            create.append(time.perf_counter() - t)
        bob = api.call("POST", "/api/v1/experiments/%s/jobs" % eb, {"action": "train"}, tb)["id"]
        workers = []
        for i in range(a.workers):
            w = api.call("POST", "/api/v1/workers", {"name": "w%d" % i}, ENROL)
            workers.append((w["id"], w["token"]))
        lease_s, leased, pos = [], 0, None
        while pos is None and leased <= a.alice:
            held = []
            for wid, tok in workers:
                t = time.perf_counter()
                js = api.call("POST", "/api/v1/workers/%s/lease?wait=0" % wid, None, tok)
                lease_s.append(time.perf_counter() - t)
                if not js:
                    continue
                leased += 1
                held.append((js["job"]["id"], wid, tok))
                if js["job"]["id"] == bob:
                    pos = leased
            for jid, wid, tok in held:
                api.call("POST", "/api/v1/jobs/%s/complete" % jid,
                         {"worker_id": wid, "status": "done", "final": {}}, tok)
        out = {"alice_jobs": a.alice, "workers": a.workers, "bob_position": pos,
               "leases": leased,
               "lease_ms_median": round(statistics.median(lease_s) * 1000, 2),
               "lease_ms_max": round(max(lease_s) * 1000, 2),
               "create_ms_median": round(statistics.median(create) * 1000, 2)}
        if a.label:
            out["label"] = a.label
        print(json.dumps(out))
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
