"""Bayesian AutoML whose model-based asks run on the controller's thread pool: four fake workers
report and complete concurrently (reports that arrive while the search asks are held and answered
after it), a reader polls the job's status meanwhile, and the controller is killed with SIGKILL
once mid-run and restarted: the search must rebuild from its events without a mismatch (event
order = the order the search saw them), and the job must end done with every trial finished and
the best trial the best recorded. /metrics must show asks that ran off the loop."""
import os
import re
import sys
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import (Controller, FakeWorker, binary_from_argv, fake_metric,  # noqa: E402
                       tempdir, write_idx)

TRIALS = 22
EPOCHS = 2


class Flaky:
    """Requests retry while the controller is down (connection refused or reset)."""

    def __init__(self, ctl):
        self.ctl = ctl

    def req(self, *a, **kw):
        for _ in range(3000):
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


def offloop_asks(api):
    st, text = api.req("GET", "/metrics")
    assert st == 200, st
    text = text.decode() if isinstance(text, bytes) else text
    m = re.search(r"^hone_automl_asks_offloop_total (\d+)$", text, re.M)
    d = re.search(r"^hone_requests_deferred_total (\d+)$", text, re.M)
    assert m and d, "no off-loop ask counters in /metrics"
    return int(m.group(1)), int(d.group(1))


def main():
    binary = binary_from_argv()
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    cfg = os.path.join(root, "c.yaml")
    with open(cfg, "w") as f:
        f.write("lease_seconds: 3\nheartbeat_seconds: 1\nlog_format: text\n")
    c = Controller(binary, root, config=cfg).start()
    port = c.base.rsplit(":", 1)[1]
    c.extra = ["--listen", "127.0.0.1:" + port]  # restarts keep the port
    api = Flaky(c)
    ds = api.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    exp = api.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]],
                  "specs": {"train": {"epochs": EPOCHS}},
                  "automl_settings": {"automl_enabled": True, "automl_algorithm": "bayesian",
                                      "automl_max_recommendations": TRIALS,
                                      "automl_max_parallel": 4, "seed": 3}})
    automl = api.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})["id"]
    done = threading.Event()
    errors = []
    finished = [0]
    lock = threading.Lock()

    def worker_loop(name):
        try:
            w = FakeWorker(api, name)
            w.register()
            while not done.is_set():
                st, js = w.req("POST", "/api/v1/workers/%s/lease?wait=1" % w.id, timeout=30,
                               api=api)
                if st == 404:
                    w.register()
                    continue
                if st != 200:
                    continue
                job = js["job"]
                cfg_ = job.get("spec") or {}
                status = "done"
                for epoch in range(job["epoch"] + 1, job["epochs_until"] + 1):
                    st, r = w.report(job, epoch, {"val_accuracy": fake_metric(cfg_, epoch)})
                    if st == 409:
                        break
                    assert st == 200, (st, r)
                    if r["decision"] != "continue":
                        status = "stopped" if r["decision"] == "stop" else "paused"
                        break
                if st == 409:
                    continue
                st, r = w.req("POST", "/api/v1/jobs/%s/complete" % job["id"],
                              {"worker_id": w.id, "status": status,
                               "final": {"test_accuracy": fake_metric(cfg_, EPOCHS)}}, api=api)
                assert st in (200, 409), (st, r)
                with lock:
                    finished[0] += 1
        except Exception as e:  # surfaced by the main thread
            errors.append(repr(e))
            done.set()

    def reader():
        while not done.is_set():
            st, js = api.req("GET", "/api/v1/jobs/" + automl)
            if st == 200 and js["automl"]["epochs_remaining"] < 0:
                errors.append("negative epochs_remaining: %s" % js["automl"])

    threads = [threading.Thread(target=worker_loop, args=("w%d" % i,)) for i in range(4)]
    threads.append(threading.Thread(target=reader))
    for t in threads:
        t.start()
    asks = deferred = 0
    killed = False
    deadline = time.time() + 150
    try:
        while time.time() < deadline and not done.is_set():
            time.sleep(0.02)
            with lock:
                n = finished[0]
            if not killed and n >= 15:  # past the random start: model-based asks happen
                a, d = offloop_asks(api)
                asks += a
                deferred += d
                c.kill9()
                killed = True
                c.start()
                continue
            st, js = api.req("GET", "/api/v1/jobs/" + automl)
            if st == 200 and js["status"] != "running":
                break
        final = api.ok("GET", "/api/v1/jobs/" + automl)
        a, d = offloop_asks(api)
        asks += a
        deferred += d
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert killed, "the run ended before the kill"
    assert final["status"] == "done", final
    au = final["automl"]
    assert au["trials_done"] == TRIALS and au["trials_running"] == 0, au
    trials = api.ok("GET", "/api/v1/jobs?parent=" + automl)["jobs"]
    assert len(trials) == TRIALS, len(trials)
    best = max(t["result"]["best_metric"] for t in trials)
    assert final["result"]["best_metric"] == best, (final["result"], best)
    assert final["result"]["best_test_accuracy"] is not None, final["result"]
    log = open(os.path.join(root, "controller.log"), "rb").read().decode(
        "utf-8", "replace")
    for bad in ("replay_mismatch", "replay_failed", "automl_ask_failed", "automl_rebuild_failed"):
        assert bad not in log, "controller log has %s" % bad
    assert "automl_rebuilt" in log, "the search was not rebuilt after the kill"
    assert asks > 0, "no ask ran on the thread pool"
    c.stop()
    print("ok: %d trials, %d asks off the loop, %d requests held for an ask" % (
        len(trials), asks, deferred))


if __name__ == "__main__":
    main()
