"""Helpers for the controller tests: a real hone-controller process on loopback (started by
tests/lib/honeproc.py, the one launcher), JSON over HTTP with urllib, tiny IDX datasets, and a fake worker
that drives register -> lease -> report -> complete like hone-worker does. Stdlib only."""
import gzip
import json
import math
import os
import struct
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess  # noqa: E402


class Controller(ControllerProcess):
    """The controller under test (tests/lib/honeproc.py starts it), with JSON calls; stop() fails
    the test when it does not exit cleanly (LeakSanitizer findings included)."""

    def __init__(self, binary, data_dir, extra=None, config=None, port=0):
        super().__init__(binary, data_dir, config=config, port=port, extra=extra)

    def stop(self):
        rc = super().stop(timeout=20)
        if rc == -9:
            raise RuntimeError("controller did not stop on SIGTERM")
        if rc != 0:
            raise RuntimeError("controller exited %d:\n%s" % (rc, self.tail()))

    def req(self, method, path, body=None, raw=None, headers=None, timeout=60):
        """Returns (status, parsed JSON or text or None)."""
        data = None
        h = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        elif raw is not None:
            data = raw
        r = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(r, timeout=timeout) as resp:
                status, payload, ctype = resp.status, resp.read(), resp.headers.get(
                    "Content-Type", "")
        except urllib.error.HTTPError as e:
            status, payload, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        if not payload:
            return status, None
        if "json" in ctype:
            return status, json.loads(payload)
        return status, payload

    def ok(self, method, path, body=None, want=(200, 201), **kw):
        st, js = self.req(method, path, body, **kw)
        if st not in want:
            raise AssertionError("%s %s -> %d %s" % (method, path, st, js))
        return js


def write_idx(dirname, n_train=50, n_test=20, rows=8, cols=8, classes=10, gz=True):
    os.makedirs(dirname, exist_ok=True)

    def put(name, header, payload):
        path = os.path.join(dirname, name + (".gz" if gz else ""))
        opener = gzip.open if gz else open
        with opener(path, "wb") as f:
            f.write(header + payload)

    for split, n in (("train", n_train), ("t10k", n_test)):
        put("%s-images-idx3-ubyte" % split, struct.pack(">IIII", 0x803, n, rows, cols),
            bytes((i * 7) % 256 for i in range(n * rows * cols)))
        put("%s-labels-idx1-ubyte" % split, struct.pack(">II", 0x801, n),
            bytes(i % classes for i in range(n)))


def fake_metric(config, epoch):
    """A smooth made-up learning curve whose quality depends on the config (lr near 0.03 best)."""
    lr = float(config.get("train.lr", 0.03))
    q = math.exp(-(math.log10(lr) - math.log10(0.03)) ** 2)
    mom = float(config.get("train.momentum", 0.9))
    q *= 1.0 - 0.2 * abs(mom - 0.9)
    return 0.5 + 0.45 * q * (1.0 - math.exp(-epoch / 3.0))


class FakeWorker:
    """Drives the worker protocol. run_job reports epochs until told to stop/pause or the target."""

    def __init__(self, ctl, name="fake"):
        self.ctl = ctl
        self.name = name
        self.id = None
        self.headers = {}
        self.decisions = []

    def register(self):
        js = self.ctl.ok("POST", "/api/v1/workers", {"name": self.name,
                                                    "resources": {"cpus": 1, "gpus": []}})
        self.id = js["id"]
        self.headers = {"Authorization": "Bearer " + js["token"]}
        return js

    def req(self, method, path, body=None, **kw):
        """A call with this worker's credential, on whichever controller object (restarts)."""
        api = kw.pop("api", self.ctl)
        return api.req(method, path, body, headers=self.headers, **kw)

    def lease(self, wait=0):
        st, js = self.req("POST", "/api/v1/workers/%s/lease?wait=%d" % (self.id, wait),
                          timeout=wait + 30)
        if st == 204:
            return None
        assert st == 200, (st, js)
        return js["job"]

    def report(self, job, epoch, metrics):
        return self.req("POST", "/api/v1/jobs/%s/report" % job["id"],
                        {"worker_id": self.id, "epoch": epoch, "metrics": metrics})

    def complete(self, job, status, final=None):
        return self.ctl.ok("POST", "/api/v1/jobs/%s/complete" % job["id"],
                           {"worker_id": self.id, "status": status, "log_tail": "fake log\n",
                            "final": final or {}}, headers=self.headers)

    def run_job(self, job, stop_after=None, on_report=None):
        """Returns the status it completed with, or None if it stopped without completing."""
        cfg = job.get("spec") or {}  # the trial's values are in its resolved spec
        start = job.get("epoch", 0) + 1
        status = "done"
        for epoch in range(start, job["epochs_until"] + 1):
            m = fake_metric(cfg, epoch)
            st, js = self.report(job, epoch, {"val_accuracy": m, "val_loss": 1 - m,
                                              "train_loss": 1 - m, "seconds": 0.01})
            if on_report:
                on_report(job, epoch, st, js)
            if st == 409:
                return None
            assert st == 200, (st, js)
            self.decisions.append(js["decision"])
            if stop_after is not None and epoch >= stop_after:
                return None
            if js["decision"] == "stop":
                status = "stopped"
                break
            if js["decision"] == "pause":
                status = "paused"
                break
        self.complete(job, status, {"test_accuracy": fake_metric(cfg, job["epochs_until"])})
        return status


def binary_from_argv():
    if len(sys.argv) < 2:
        print("usage: %s path/to/hone-controller" % sys.argv[0])
        sys.exit(2)
    return os.path.abspath(sys.argv[1])


def tempdir():
    return tempfile.mkdtemp(prefix="hone-ctl-test-")
