"""Crash safety: a Hyperband AutoML job driven by two fake workers while the controller is killed
with SIGKILL at random moments (at least 5 times) and restarted on the same SQLite file and port.
Workers retry through the outage like hone-worker does. The run must complete, and every metric
report the controller acknowledged must be stored exactly once with its value."""
import os
import random
import socket
import sys
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402


class Flaky:
    """Wraps a Controller: requests retry while it is down (connection refused or reset)."""

    def __init__(self, ctl):
        self.ctl = ctl

    def req(self, *a, **kw):
        for _ in range(2000):
            try:
                return self.ctl.req(*a, **kw)
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.02)
        raise AssertionError("controller never came back")

    def ok(self, method, path, body=None, want=(200, 201), **kw):
        st, js = self.req(method, path, body, **kw)
        if st not in want:
            raise AssertionError("%s %s -> %d %s" % (method, path, st, js))
        return js


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    binary = binary_from_argv()
    rnd = random.Random(int(os.environ.get("HONE_TEST_SEED", "7")))
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("lease_seconds: 2\nheartbeat_seconds: 1\nlog_format: text\n")
    port = free_port()
    c = Controller(binary, d, config=cfg, port=port).start()
    api = Flaky(c)
    acked = {}  # (job id, epoch) -> value the controller acknowledged
    lock = threading.Lock()
    ds = api.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(d, "ds")})
    exp = api.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]],
                  "automl_settings": {"automl_enabled": True,
                                      "automl_algorithm": os.environ.get("HONE_TEST_ALGO",
                                                                         "hyperband"),
                                      "automl_R": 9, "automl_nu": 3, "automl_max_parallel": 2}})
    automl = api.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    done = threading.Event()
    errors = []

    def on_report(job, epoch, st, js):
        if st == 200:
            with lock:
                acked[(job["id"], epoch)] = None

    def worker_loop(name):
        try:
            w = FakeWorker(api, name)
            w.register()
            while not done.is_set():
                st, js = w.req("POST", "/api/v1/workers/%s/lease?wait=1" % w.id, timeout=30,
                               api=api)
                if st == 404:  # forgotten worker: register again
                    w.register()
                    continue
                if st != 200:
                    continue
                job = js["job"]
                cfg_ = job.get("spec") or {}
                for epoch in range(job["epoch"] + 1, job["epochs_until"] + 1):
                    from hone_test import fake_metric
                    m = fake_metric(cfg_, epoch)
                    time.sleep(0.01)  # a trainer takes a while per epoch
                    st, r = w.report(job, epoch, {"val_accuracy": m, "seconds": 0.01})
                    if st == 409:
                        break
                    assert st == 200, (st, r)
                    with lock:
                        acked[(job["id"], epoch)] = m
                    if r["decision"] != "continue":
                        break
                else:
                    r = {"decision": "done"}
                if st == 409:
                    continue
                status = {"stop": "stopped", "pause": "paused"}.get(r["decision"], "done")
                st, r = w.req("POST", "/api/v1/jobs/%s/complete" % job["id"],
                              {"worker_id": w.id, "status": status}, api=api)
                assert st in (200, 409), (st, r)
        except Exception as e:  # surfaced by the main thread
            errors.append(repr(e))
            done.set()

    threads = [threading.Thread(target=worker_loop, args=("w%d" % i,)) for i in range(2)]
    for t in threads:
        t.start()
    kills = 0
    next_kill = rnd.randint(3, 8)  # kill after this many acknowledged reports, then again...
    deadline = time.time() + 90
    try:
        while time.time() < deadline and not done.is_set():
            time.sleep(0.005)
            with lock:
                n = len(acked)
            if kills < 10 and n >= next_kill:
                time.sleep(rnd.uniform(0.0, 0.02))  # land anywhere inside a request
                c.kill9()
                kills += 1
                next_kill = n + rnd.randint(3, 8)
                time.sleep(rnd.uniform(0.0, 0.2))
                c.start()
                continue
            st, js = api.req("GET", "/api/v1/jobs/" + automl["id"])
            if st == 200 and js["status"] != "running":
                break
        final = api.ok("GET", "/api/v1/jobs/" + automl["id"])
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert kills >= 5, "only %d kills happened before the run ended" % kills
    assert final["status"] == "done", final
    trials = api.ok("GET", "/api/v1/jobs?parent=" + automl["id"])["jobs"]
    stored = {}
    for t in trials:
        assert t["status"] in ("done", "stopped"), t
        rows = api.ok("GET", "/api/v1/jobs/%s/metrics" % t["id"])["metrics"]
        epochs = [r["epoch"] for r in rows]
        assert epochs == list(range(1, len(epochs) + 1)), (t["id"], epochs)  # once each, no gap
        for r in rows:
            stored[(t["id"], r["epoch"])] = r["val_accuracy"]
    for key, m in acked.items():
        assert key in stored, ("acknowledged metric lost", key)
        assert m is None or stored[key] == m, (key, m, stored[key])
    c.stop()
    print("ok: %d kills, %d trials, %d acknowledged reports" % (kills, len(trials), len(acked)))
    return trials


if __name__ == "__main__":
    main()
