"""A conditional search space through a real hone-controller (fake workers): a BOHB job over an mlp
space where train.momentum is swept only given sgd and train.beta2 only given adamw. Every trial's
config holds exactly its active parameters and its lease's spec keeps the experiment's value of
the others; the controller is restarted mid-search and the rebuilt search (replayed from its
stored events) goes on to propose exactly what an uninterrupted run with the same seed proposes."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

SPACE = {"train.optimizer": {"type": "categorical", "values": ["sgd", "adamw"]},
         "train.lr": {"type": "float", "min": 0.001, "max": 0.3, "log": True},
         "train.momentum": {"type": "float", "min": 0.5, "max": 0.99,
                            "condition": {"train.optimizer": ["sgd"]}},
         "train.beta2": {"type": "float", "min": 0.99, "max": 0.9999,
                         "condition": {"train.optimizer": ["adamw"]}}}


def experiment(c, ds, name):
    exp = c.ok("POST", "/api/v1/experiments",
               {"name": name, "network_arch": "mlp", "train_datasets": [ds],
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "bohb",
                                    "automl_R": 9, "automl_nu": 3, "automl_max_parallel": 1,
                                    "seed": 7, "automl_start_from_spec": False,
                                    "automl_hyperparameters": SPACE}})
    return c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})["id"]


def check_lease(job):
    """The lease's spec: the trial's values, the experiment's own for an inactive parameter."""
    spec = job["spec"]
    if spec["train.optimizer"] == "adamw":
        assert spec["train.momentum"] == 0.9, spec
    else:
        assert spec["train.beta2"] == 0.999, spec


def drive(c, w, jid, trials=None, leases=None):
    """Runs leases one at a time until the job ends, or until `trials` leases were run."""
    n = 0
    deadline = time.time() + 120
    while time.time() < deadline:
        if trials is not None and n >= trials:
            return None
        job = w.lease(wait=1)
        if job is None:
            st = c.ok("GET", "/api/v1/jobs/" + jid)
            if st["status"] != "running":
                return st
            continue
        check_lease(job)
        w.run_job(job)
        n += 1
        if leases is not None:
            leases.append(job["trial"])
    raise AssertionError("search did not end")


def configs(c, jid):
    trials = c.ok("GET", "/api/v1/jobs?parent=%s&limit=100" % jid)["jobs"]
    return {t["trial"]: t["config"] for t in trials}


def main():
    binary = binary_from_argv()
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    c = Controller(binary, d).start()
    w = FakeWorker(c, "w1")
    w.register()
    ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(d, "ds")})["id"]
    # the same search twice: once to its end, once restarted part way
    ref = experiment(c, ds, "ref")
    st = drive(c, w, ref)
    assert st["status"] == "done", st
    want = configs(c, ref)
    assert len(want) == 17, want
    for cfg in want.values():
        sgd = cfg["train.optimizer"] == "sgd"
        assert ("train.momentum" in cfg) == sgd and ("train.beta2" in cfg) == (not sgd), cfg
    assert {c_["train.optimizer"] for c_ in want.values()} == {"sgd", "adamw"}, want
    space = c.ok("GET", "/api/v1/jobs/" + ref)["automl"]["search_space"]
    assert space["train.beta2"]["condition"] == {"train.optimizer": ["adamw"]}, space

    jid = experiment(c, ds, "restarted")
    assert drive(c, w, jid, trials=8) is None
    port = c.port
    c.stop()
    c = Controller(binary, d, port=port).start()
    w.ctl = c
    st = drive(c, w, jid)
    assert st["status"] == "done", st
    got = configs(c, jid)
    assert got == want, (got, want)
    c.stop()
    print("ok: %d trials, the same after a restart" % len(got))


if __name__ == "__main__":
    main()
