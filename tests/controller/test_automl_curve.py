"""Learning-curve stopping through a real hone-controller (automl_early_stop,
automl_early_stop_confidence, the hyperband_es algorithm). Fake workers report the smooth curves of
hone_test.fake_metric: a random search of 8-epoch trials with the default (curve for random) ends
some trials stopped early, before their budget, and the job's log gives the prediction; the same
search with "none" trains every trial to the end; hyperband_es runs to done; bad values are refused
with 422 naming the field, and nothing is stored."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

EPOCHS = 8


def experiment(c, ds, settings):
    return c.ok("POST", "/api/v1/experiments",
                {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                 "specs": {"train": {"epochs": EPOCHS}}, "automl_settings": settings})


def drive(c, workers, automl_id, budget_s=60):
    deadline = time.time() + budget_s
    while time.time() < deadline:
        got = False
        for w in workers:
            job = w.lease(wait=0)
            if job is None:
                continue
            got = True
            with open(os.path.join(job["out_dir"], "model.bin"), "wb") as f:
                f.write(b"weights")
            w.run_job(job)
        st = c.ok("GET", "/api/v1/jobs/" + automl_id)
        if st["status"] in ("done", "failed", "canceled"):
            return st
        if not got:
            time.sleep(0.05)
    raise AssertionError("the AutoML job did not end")


def search(c, workers, ds, settings):
    exp = experiment(c, ds, settings)
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    st = drive(c, workers, job["id"])
    assert st["status"] == "done", st
    trials = c.ok("GET", "/api/v1/jobs?parent=" + st["id"])["jobs"]
    _, log = c.req("GET", "/api/v1/jobs/%s/logs" % st["id"])
    return st, trials, log.decode() if isinstance(log, bytes) else str(log)


def main():
    binary = binary_from_argv()
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    c = Controller(binary, d).start()
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(d, "ds")})["id"]
        # bad values: 422 naming the field, nothing stored
        before = len(c.ok("GET", "/api/v1/experiments")["experiments"])
        for settings, field in (({"automl_early_stop": "median"}, "automl_early_stop"),
                                ({"automl_early_stop": True}, "automl_early_stop"),
                                ({"automl_early_stop_confidence": 0.3},
                                 "automl_early_stop_confidence"),
                                ({"automl_early_stop_confidence": 1.0},
                                 "automl_early_stop_confidence"),
                                ({"automl_early_stop_confidence": "high"},
                                 "automl_early_stop_confidence")):
            st, js = c.req("POST", "/api/v1/experiments",
                           {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                            "automl_settings": dict(settings, automl_enabled=True)})
            assert st == 422 and js["error"]["field"] == "automl_settings." + field, (st, js)
        assert len(c.ok("GET", "/api/v1/experiments")["experiments"]) == before

        workers = [FakeWorker(c, "w%d" % i) for i in range(2)]
        for w in workers:
            w.register()
        base = {"automl_enabled": True, "automl_algorithm": "random",
                "automl_max_recommendations": 8, "automl_max_parallel": 2, "seed": 4}

        # the default for random: curve stops
        st, trials, log = search(c, workers, ds, base)
        stopped = [t for t in trials if t["status"] == "stopped"]
        print("random, default early stop: %d of %d trials stopped early at epochs %s" % (
            len(stopped), len(trials), sorted(t["epoch"] for t in stopped)))
        assert len(trials) == 8 and stopped, trials
        assert all(4 <= t["epoch"] < EPOCHS and t["stopped_early"] for t in stopped), stopped
        assert "trials stopped early by their learning curves" in log, log
        assert "learning curve predicts" in log, log
        assert st["automl"]["trials_stopped_early"] == len(stopped), st["automl"]
        # the best trial is a finished one
        best = [t for t in trials if t["id"] == st["result"]["best_job_id"]][0]
        assert best["status"] == "done" and best["epoch"] == EPOCHS, best
        epochs_curve = sum(t["epoch"] for t in trials)

        # "none": every trial trains its whole budget
        st, trials, log = search(c, workers, ds, dict(base, automl_early_stop="none"))
        assert all(t["status"] == "done" and t["epoch"] == EPOCHS for t in trials), trials
        assert "learning curve" not in log, log
        epochs_none = sum(t["epoch"] for t in trials)
        print("random: %d epochs with curve stopping, %d without" % (epochs_curve, epochs_none))
        assert epochs_curve < epochs_none

        # an explicit confidence is accepted and stored; hyperband_es runs to done
        exp = experiment(c, ds, dict(base, automl_algorithm="hyperband_es", automl_R=9,
                                     automl_early_stop_confidence=0.9))
        assert exp["automl_settings"]["automl_early_stop_confidence"] == 0.9, exp
        job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
        st = drive(c, workers, job["id"])
        assert st["status"] == "done", st
        _, log = c.req("GET", "/api/v1/jobs/%s/logs" % st["id"])
        log = log.decode() if isinstance(log, bytes) else str(log)
        assert "search started: hyperband_es" in log, log
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
