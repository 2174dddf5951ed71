"""How an AutoML job ends, against a real hone-controller driven by a fake worker:
1. restart between a trial's last report and its complete: the rebuilt search is done, but the
   AutoML job must stay running until that trial completes, then end with its test accuracy;
2. canceling an AutoML job cancels every trial in the store at once (running ones too), and the
   worker holding one is told: heartbeat lists it under cancel, a report gets 409;
3. data.test_limit is a spec key the controller accepts and hands to hone-train."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import (Controller, FakeWorker, binary_from_argv, fake_metric,  # noqa: E402
                       tempdir, write_idx)


def setup(c, root, settings, specs=None):
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    return c.ok("POST", "/api/v1/experiments",
                {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]],
                 "specs": specs or {}, "automl_settings": settings})


def report_all(w, job):
    """Reports every epoch of the lease; returns the last decision."""
    cfg = job.get("spec") or {}
    dec = None
    for epoch in range(job["epoch"] + 1, job["epochs_until"] + 1):
        st, js = w.report(job, epoch, {"val_accuracy": fake_metric(cfg, epoch), "seconds": 0.01})
        assert st == 200, (st, js)
        dec = js["decision"]
        if dec != "continue":
            break
    return dec


def restart_before_last_complete(binary):
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    exp = setup(c, root, {"automl_enabled": True, "automl_algorithm": "random",
                          "automl_max_recommendations": 2, "automl_max_parallel": 2},
                {"train": {"epochs": 3}})
    automl = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})["id"]
    w = FakeWorker(c)
    w.register()
    first, last = w.lease(), w.lease()
    assert first and last, (first, last)
    assert report_all(w, first) == "stop"
    w.complete(first, "done", {"test_accuracy": 0.5})
    assert report_all(w, last) == "stop"
    # Every result is in (the search is done) but the last trial's complete has not arrived.
    c.kill9()
    c.start()
    st = c.ok("GET", "/api/v1/jobs/" + automl)
    assert st["status"] == "running", ("AutoML job ended while a trial still runs", st)
    assert st["automl"]["trials_running"] == 1, st["automl"]
    w.complete(last, "done", {"test_accuracy": 0.75})
    st = c.ok("GET", "/api/v1/jobs/" + automl)
    assert st["status"] == "done", st
    assert st["automl"]["trials_running"] == 0 and st["automl"]["trials_done"] == 2, st["automl"]
    best = st["result"]
    want = 0.5 if best["best_job_id"] == first["id"] else 0.75
    assert best["best_test_accuracy"] == want, best
    c.stop()
    print("ok: restart before the last complete: the job waited for it")


def cancel_ends_trials(binary):
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    exp = setup(c, root, {"automl_enabled": True, "automl_algorithm": "random",
                          "automl_max_recommendations": 4, "automl_max_parallel": 3},
                {"train": {"epochs": 5}})
    automl = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})["id"]
    w = FakeWorker(c)
    w.register()
    running = w.lease()
    assert running
    st, js = w.report(running, 1, {"val_accuracy": 0.5})
    assert st == 200 and js["decision"] == "continue", (st, js)
    c.ok("POST", "/api/v1/jobs/%s:cancel" % automl)
    assert c.ok("GET", "/api/v1/jobs/" + automl)["status"] == "canceled"
    st, text = c.req("GET", "/api/v1/jobs/%s/logs" % automl)  # the search's log says so
    assert st == 200 and b"Z search canceled: " in text, (st, text)
    trials = c.ok("GET", "/api/v1/jobs?parent=" + automl)["jobs"]
    assert len(trials) == 3, trials
    for t in trials:
        assert t["status"] == "canceled", ("trial left %s after cancel" % t["status"], t)
    st = c.ok("GET", "/api/v1/jobs/" + automl)["automl"]
    assert st["trials_running"] == 0 and st["trials_queued"] == 0, st
    hb = c.ok("POST", "/api/v1/workers/%s/heartbeat" % w.id, {"jobs": [running["id"]]},
              headers=w.headers)
    assert hb["cancel"] == [running["id"]], hb
    st, js = w.report(running, 2, {"val_accuracy": 0.6})
    assert st == 409, (st, js)
    assert w.lease() is None  # nothing of the canceled search is handed out
    # A worker that completes anyway is answered with the job, still canceled.
    done = c.ok("POST", "/api/v1/jobs/%s/complete" % running["id"],
                {"worker_id": w.id, "status": "stopped"}, headers=w.headers)
    assert done["status"] == "canceled", done
    c.stop()
    print("ok: cancel ends every trial and tells the worker")


def test_limit_key(binary):
    root = tempdir()
    write_idx(os.path.join(root, "ds"))
    c = Controller(binary, root).start()
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(root, "ds")})
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": "t", "network_arch": "mlp", "train_datasets": [ds["id"]],
                "specs": {"data": {"test_limit": 256}}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"],
               {"action": "train", "specs": {"data.test_limit": 128}})
    st, js = c.req("POST", "/api/v1/experiments/%s/jobs" % exp["id"],
                   {"action": "train", "specs": {"data": {"test_limit": -1}}})
    assert st == 422 and js["error"]["field"] == "specs.data.test_limit", (st, js)
    w = FakeWorker(c)
    w.register()
    lease = w.lease()
    assert lease["id"] == job["id"]
    assert lease["spec"]["data.test_limit"] == 128, lease["spec"]
    c.stop()
    print("ok: data.test_limit reaches the trainer")


def main():
    binary = binary_from_argv()
    restart_before_last_complete(binary)
    cancel_ends_trials(binary)
    test_limit_key(binary)


if __name__ == "__main__":
    main()
