"""AutoML through the worker protocol against a real hone-controller: fake workers register, lease,
report per-epoch metrics and complete, for a Hyperband job (decisions must include stop and pause,
paused trials resume from their epoch) and a Bayesian one; the AutoML job ends done with its best
trial, whose artifacts are copied to best_model/. Also: an expired lease requeues its job with
resume, and a failing trainer is retried then failed."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402


def setup(c, root, settings, specs=None):
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": root})
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]],
                "specs": specs or {}, "automl_settings": settings})
    return exp


STRAGGLERS = []


def straggle(job, epoch, st, js):
    """A trainer that keeps going after stop/pause: later epochs get the same answer, not an error."""
    if st == 200 and js["decision"] in ("stop", "pause") and len(STRAGGLERS) < 4:
        w = job["_worker"]
        if epoch + 1 <= job["epochs_until"]:
            st2, js2 = w.report(job, epoch + 1, {"val_accuracy": 0.99, "seconds": 0.01})
            assert st2 == 200 and js2["decision"] == js["decision"], (st2, js2, js)
        st2, js2 = w.report(job, 10000, {"val_accuracy": 0.99})  # past its target: refused
        assert st2 == 422 and js2["error"]["field"] == "epoch", (st2, js2)
        STRAGGLERS.append(job["id"])


def drive(c, workers, automl_id, budget_s=60):
    """Round-robin over the workers until the AutoML job ends. Returns leases seen."""
    leases = []
    deadline = time.time() + budget_s
    while time.time() < deadline:
        got = False
        for w in workers:
            job = w.lease(wait=0)
            if job is None:
                continue
            got = True
            leases.append(job)
            job["_worker"] = w
            # A trainer writes its files into out_dir (same machine).
            with open(os.path.join(job["out_dir"], "model.bin"), "wb") as f:
                f.write(b"weights-of-trial-%d" % job["trial"])
            with open(os.path.join(job["out_dir"], "checkpoint.ckpt"), "wb") as f:
                f.write(b"ckpt")
            w.run_job(job, on_report=straggle)
        st = c.ok("GET", "/api/v1/jobs/" + automl_id)
        if st["status"] in ("done", "failed", "canceled"):
            return leases, st
        if not got:
            time.sleep(0.05)
    raise AssertionError("automl did not finish: %s" % c.ok("GET", "/api/v1/jobs/" + automl_id))


def check_best(c, st, maximize=True):
    trials = c.ok("GET", "/api/v1/jobs?parent=" + st["id"])["jobs"]
    metrics = [t["result"]["best_metric"] for t in trials if t["result"]["best_metric"] is not None]
    best = max(metrics) if maximize else min(metrics)
    assert st["result"]["best_metric"] == best, (st["result"], best)
    bj = [t for t in trials if t["id"] == st["result"]["best_job_id"]][0]
    assert bj["result"]["best_metric"] == best
    files = {f["name"] for f in c.ok("GET", "/api/v1/jobs/%s/artifacts" % st["id"])["files"]}
    for f in ("best_model/model.bin", "best_model/spec.yaml", "best_model/metrics.jsonl",
              "best_model/recommendation_%d.yaml" % bj["trial"]):
        assert f in files, files
    assert not [f for f in files if f.startswith("best_model/recommendation_") and
                f != "best_model/recommendation_%d.yaml" % bj["trial"]], files
    st_, data = c.req("GET", "/api/v1/jobs/%s/artifacts/best_model/model.bin" % st["id"])
    assert data == b"weights-of-trial-%d" % bj["trial"], data
    return trials


def main():
    binary = binary_from_argv()
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("lease_seconds: 2\nheartbeat_seconds: 1\nmax_attempts: 2\nlog_format: text\n")
    c = Controller(binary, d, config=cfg).start()
    try:
        workers = [FakeWorker(c, "w%d" % i) for i in range(2)]
        for w in workers:
            w.register()
        # Hyperband: R=9, eta=3.
        exp = setup(c, os.path.join(d, "ds"),
                    {"automl_enabled": True, "automl_algorithm": "hyperband", "automl_R": 9,
                     "automl_nu": 3, "automl_max_parallel": 2})
        job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        assert job["action"] == "automl" and job["status"] == "running", job
        leases, st = drive(c, workers, job["id"])
        decisions = set(workers[0].decisions + workers[1].decisions)
        assert {"stop", "pause", "continue"} <= decisions, decisions
        assert st["status"] == "done", st
        assert len(STRAGGLERS) == 4
        assert any(l["resume"] and l["epoch"] > 0 for l in leases), "no trial was resumed"
        trials = check_best(c, st)
        assert st["automl"]["trials_stopped_early"] > 0, st["automl"]
        assert st["automl"]["epochs_remaining"] == 0
        assert all(t["status"] in ("done", "stopped") for t in trials), trials
        # Checkpoints of the losers were deleted (automl_delete_intermediate_ckpt default true).
        loser = [t for t in trials if t["id"] != st["result"]["best_job_id"]][0]
        names = {f["name"] for f in c.ok("GET", "/api/v1/jobs/%s/artifacts" % loser["id"])["files"]}
        assert "model.bin" in names and "checkpoint.ckpt" not in names, names
        m = c.ok("GET", "/api/v1/jobs/%s/metrics" % job["id"])["trials"]
        assert len(m) == len(trials)

        # Bayesian: 6 trials of 3 epochs.
        exp2 = setup(c, os.path.join(d, "ds"),
                     {"automl_enabled": True, "automl_algorithm": "bayesian",
                      "automl_max_recommendations": 6, "automl_max_parallel": 2},
                     specs={"train": {"epochs": 3}})
        job2 = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp2["id"], {"action": "automl"})
        _, st2 = drive(c, workers, job2["id"])
        assert st2["status"] == "done", st2
        trials2 = check_best(c, st2)
        assert len(trials2) == 6, len(trials2)
        # automl_start_from_spec (default true): trial 0 trains the experiment's own spec, the
        # stored space has it as each parameter's default, and no other trial repeats it
        space = st2["automl"]["search_space"]
        # mlp's defaults, train.batch_size and train.lr sized to this tiny set (the job's
        # resolved spec)
        resolved = st2["resolved_spec"]
        spec = {"train.lr": resolved["train.lr"], "train.batch_size": resolved["train.batch_size"],
                "train.weight_decay": 5e-4, "train.momentum": 0.9}
        assert resolved["train.batch_size"] < 128 and resolved["train.lr"] < 0.1, resolved
        for k, v in spec.items():
            if k in space:
                assert space[k]["default"] == v, (k, space[k])
        by_trial = {t["trial"]: t["config"] for t in trials2}
        # every parameter active at the spec's values (adamw's betas are not: the spec is sgd's,
        # and a config leaves out what its conditions make inactive)
        active = {k for k, p in space.items()
                  if all(space[q]["default"] in vs for q, vs in p.get("condition", {}).items())}
        assert "train.beta1" in space and "train.beta1" not in active, space
        assert set(by_trial[0]) == active and all(
            by_trial[0][k] == space[k]["default"] for k in active), (by_trial[0], space)
        assert all(by_trial[t] != by_trial[0] for t in by_trial if t), by_trial
        # off, or a spec value outside its swept range (train.lr 5 > the mlp range's 0.3): no
        # defaults in the space, every trial drawn
        for settings, train in (({"automl_start_from_spec": False}, {"epochs": 3}),
                                ({}, {"epochs": 3, "lr": 5})):
            e = setup(c, os.path.join(d, "ds"),
                      dict({"automl_enabled": True, "automl_algorithm": "random",
                            "automl_max_recommendations": 2, "automl_max_parallel": 2}, **settings),
                      specs={"train": train})
            assert e["automl_settings"]["automl_start_from_spec"] is (settings == {}), e
            j = c.ok("POST", "/api/v1/experiments/%s/jobs" % e["id"], {"action": "automl"})
            js = c.ok("GET", "/api/v1/jobs/" + j["id"])
            assert all("default" not in p for p in js["automl"]["search_space"].values()), js
            c.ok("POST", "/api/v1/jobs/%s/cancel" % j["id"])

        # Lease expiry: a worker takes a job and vanishes; the job is requeued with resume.
        exp3 = setup(c, os.path.join(d, "ds"), {"automl_enabled": False},
                     specs={"train": {"epochs": 4}})
        tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp3["id"], {"action": "train"})
        ghost, w = workers
        j = ghost.lease(wait=0)
        assert j["id"] == tj["id"]
        assert ghost.run_job(j, stop_after=2) is None  # two epochs, then silence
        j2 = w.lease(wait=10)  # long-poll until the lease expires (2 s)
        assert j2 is not None and j2["id"] == tj["id"], j2
        assert j2["resume"] and j2["epoch"] == 2 and j2["checkpoint"], j2
        st, js = ghost.report(j, 3, {"val_accuracy": 0.1})  # the ghost comes back: refused
        assert st == 409, (st, js)
        assert w.run_job(j2) == "done"
        fin = c.ok("GET", "/api/v1/jobs/" + tj["id"])
        assert fin["status"] == "done" and fin["epoch"] == 4, fin
        assert [x["epoch"] for x in c.ok("GET", "/api/v1/jobs/%s/metrics" % tj["id"])["metrics"]] \
            == [1, 2, 3, 4]

        # Failures: retried once (max_attempts 2), then failed with the log tail.
        fj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp3["id"], {"action": "train"})
        for attempt in range(2):
            j = w.lease(wait=0)
            assert j["id"] == fj["id"] and j["attempts"] == attempt, j
            c.ok("POST", "/api/v1/jobs/%s/complete" % j["id"],
                 {"worker_id": w.id, "status": "failed", "log_tail": "boom %d" % attempt},
                 headers=w.headers)
        fin = c.ok("GET", "/api/v1/jobs/" + fj["id"])
        assert fin["status"] == "failed" and fin["error"] == "boom 1", fin
        assert w.lease(wait=0) is None
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
