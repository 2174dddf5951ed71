"""Conditional search spaces end to end (issue 31): a real controller and a real worker on loopback,
real training on the CPU, on a small learnable IDX set made here.

  1. A space whose train.momentum is swept only given train.optimizer sgd: every trial trains to
     its end; an adamw trial's config has no momentum (its resolved spec keeps the experiment's
     0.9), an sgd trial's has one, and the search's stored space shows the condition.
  2. A resnet18 experiment whose search sweeps the network: a trial drawn as resnet34 trains a
     resnet34 (its resolved spec and its model say so), the other a resnet18.
  3. Refused at create with 422 naming automl_settings.automl_hyperparameters: a condition on a
     parameter the space does not have, a network outside the resnet family, and a resnet18 spec
     whose resnet34 trials would exceed the parameter limit; nothing stored.
  4. The CLI: `hone experiment automl-defaults` shows a resnet's conditions (RANGE ... if
     train.lr_schedule=step) and its depth; `hone automl start --param NAME=...@PARENT=V` stores
     the condition in the job's space.

usage: test_conditions.py HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from blob_idx import write_blob_idx  # noqa: E402


def api(ctl, method, path, body=None, want=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(ctl.base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            st, out = resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        st, out = e.code, json.loads(e.read() or b"null")
    if want is not None:
        assert st == want, (method, path, st, out)
    elif st >= 300:
        raise AssertionError("%s %s -> %d %s" % (method, path, st, out))
    return out


def wait(ctl, jid, budget=400):
    deadline = time.time() + budget
    while time.time() < deadline:
        j = api(ctl, "GET", "/api/v1/jobs/" + jid)
        if j["status"] in ("done", "failed", "canceled"):
            return j
        time.sleep(0.3)
    raise AssertionError("job %s still %s" % (jid, j["status"]))


def search(ctl, ds, network, space, trials, specs):
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "cond-" + network, "network_arch": network, "train_datasets": [ds],
               "specs": specs,
               "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                   "automl_max_recommendations": trials,
                                   "automl_max_parallel": 1, "seed": 3,
                                   "automl_start_from_spec": False,
                                   "automl_hyperparameters": space}})
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    job = wait(ctl, job["id"])
    assert job["status"] == "done", job
    trials_ = api(ctl, "GET", "/api/v1/jobs?parent=%s&limit=100" % job["id"])["jobs"]
    assert len(trials_) == trials and all(t["status"] == "done" for t in trials_), trials_
    return job, [api(ctl, "GET", "/api/v1/jobs/" + t["id"]) for t in trials_]


def optimizer_momentum(ctl, ds):
    space = {"train.optimizer": {"type": "categorical", "values": ["adamw", "sgd"]},
             "train.lr": {"type": "float", "min": 0.001, "max": 0.01, "log": True},
             "train.momentum": {"type": "float", "min": 0.5, "max": 0.95,
                                "condition": {"train.optimizer": ["sgd"]}}}
    job, trials = search(ctl, ds, "mlp", space, 4, {"train": {"epochs": 2}})
    stored = job["automl"]["search_space"]["train.momentum"]
    assert stored["condition"] == {"train.optimizer": ["sgd"]}, stored
    seen = set()
    for t in trials:
        cfg, rs = t["config"], t["resolved_spec"]
        opt = cfg["train.optimizer"]
        seen.add(opt)
        assert rs["train.optimizer"] == opt, (cfg, rs)
        assert ("train.momentum" in cfg) == (opt == "sgd"), cfg
        if opt == "adamw":
            assert rs["train.momentum"] == 0.9, rs  # the experiment's own, untouched
        else:
            assert rs["train.momentum"] == cfg["train.momentum"], (cfg, rs)
        assert t["epoch"] == 2 and t["result"]["best_metric"] is not None, t
    assert seen == {"adamw", "sgd"}, [t["config"] for t in trials]
    print("optimizer: %s" % ", ".join(json.dumps(t["config"], sort_keys=True) for t in trials))


def depth(ctl, ds):
    space = {"network": {"type": "categorical", "values": ["resnet18", "resnet34"]},
             "train.lr": {"type": "float", "min": 0.01, "max": 0.1, "log": True}}
    _, trials = search(ctl, ds, "resnet18", space, 3,
                       {"train": {"epochs": 1, "batch_size": 64}, "model": {"width": 8}})
    size = {}
    for t in trials:
        net = t["config"]["network"]
        assert t["resolved_spec"]["network"] == net, (t["config"], t["resolved_spec"])
        arts = api(ctl, "GET", "/api/v1/jobs/%s/artifacts" % t["id"])["files"]
        size[net] = [f["bytes"] for f in arts if f["name"] == "model.bin"][0]
    # the weights trained are the trial's network's: resnet34 has more blocks at the same width
    assert set(size) == {"resnet18", "resnet34"}, [t["config"] for t in trials]
    assert size["resnet34"] > 1.5 * size["resnet18"], size
    print("depth: trials trained %s" % sorted(t["config"]["network"] for t in trials))


def refusals(ctl, ds):
    n = len(api(ctl, "GET", "/api/v1/experiments")["experiments"])
    for net, space, words in (
            ("mlp", {"train.momentum": {"type": "float", "min": 0.5, "max": 0.95,
                                        "condition": {"train.optim": ["sgd"]}}},
             "parameter 'train.momentum': condition on 'train.optim', which is not a parameter"),
            ("resnet18", {"network": {"type": "categorical", "values": ["resnet18", "mlp"]}},
             "network: a resnet18 experiment's search may set it to resnet18, resnet34 only")):
        out = api(ctl, "POST", "/api/v1/experiments",
                  {"name": "bad", "network_arch": net, "train_datasets": [ds],
                   "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                       "automl_hyperparameters": space}}, want=422)
        err = out["error"]
        assert err["field"] == "automl_settings.automl_hyperparameters", err
        assert words in err["message"], err
    assert len(api(ctl, "GET", "/api/v1/experiments")["experiments"]) == n
    # the size check of a trial is its own network's: width 160 fits the parameter limit as a
    # resnet18 and not as a resnet34, which the search may draw
    err = api(ctl, "POST", "/api/v1/experiments",
              {"name": "wide", "network_arch": "resnet18", "train_datasets": [ds],
               "specs": {"model": {"width": 160}},
               "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                   "automl_hyperparameters": {"network": {
                                       "type": "categorical",
                                       "values": ["resnet18", "resnet34"]}}}}, want=422)["error"]
    assert err["field"] == "automl_settings.automl_hyperparameters", err
    assert "this resnet34 (model.width 160)" in err["message"] and \
        'a trial the search may draw: network="resnet34"' in err["message"], err
    assert len(api(ctl, "GET", "/api/v1/experiments")["experiments"]) == n


def memory_fit(ctl, root):
    # A set large enough for the sized batch range to reach 512: the default resnet18 space sweeps
    # resnet34 at width 64, a trial that needs 13.9 GiB at batch 512 (above the 12 GiB a worker is
    # assumed to have), so the batches swept stop where that trial fits. Before, the default
    # space's own corner made `automl start` of a resnet18 Fashion-MNIST experiment a 422.
    big = os.path.join(root, "data", "big")
    write_blob_idx(big, 20000, 100)
    ds = api(ctl, "POST", "/api/v1/datasets", {"name": "big", "path": big})["id"]
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "fit", "network_arch": "resnet18", "train_datasets": [ds],
               "automl_settings": {"automl_enabled": True, "automl_algorithm": "random"}})
    batch = api(ctl, "GET", "/api/v1/experiments/%s/automl-defaults" % exp["id"])[
        "default_hyperparameters"]["train.batch_size"]
    assert 128 <= batch["max"] <= 256 and batch["min"] < batch["max"], batch
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"},
              want=201)
    assert job["automl"]["search_space"]["train.batch_size"]["max"] == batch["max"], job
    api(ctl, "POST", "/api/v1/jobs/%s/cancel" % job["id"])
    assert wait(ctl, job["id"])["status"] == "canceled"
    print("memory fit: batch swept %d .. %d" % (batch["min"], batch["max"]))


def hone(bins, ctl, *args):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout


def cli(bins, ctl, ds):
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "cli-resnet", "network_arch": "resnet18", "train_datasets": [ds]})
    dfl = api(ctl, "GET", "/api/v1/experiments/%s/automl-defaults" % exp["id"])
    sg = dfl["default_hyperparameters"]["train.step_gamma"]
    assert sg["condition"] == {"train.lr_schedule": ["step"]} and sg["default"] == 0.1, sg
    assert dfl["default_hyperparameters"]["network"]["default"] == "resnet18", dfl
    text = hone(bins, ctl, "experiment", "automl-defaults", exp["id"])
    row = [l for l in text.splitlines() if l.startswith("train.step_gamma")][0]
    assert "0.05 .. 0.5 (log) if train.lr_schedule=step" in row, text
    row = [l.split() for l in text.splitlines() if l.startswith("network ")][0]
    assert "resnet34" in row[2] and row[-2:] == ["resnet18", "yes"], text  # DEFAULT, SWEPT
    # a conditional --param: the job's stored space has the condition
    mexp = api(ctl, "POST", "/api/v1/experiments",
               {"name": "cli-mlp", "network_arch": "mlp", "train_datasets": [ds],
                "specs": {"train": {"epochs": 1}}})
    out = hone(bins, ctl, "--json", "automl", "start", "--experiment", mexp["id"],
               "--algorithm", "random", "--max-recommendations", "2", "--max-parallel", "1",
               "--param", "train.optimizer=sgd,adamw",
               "--param", "train.momentum=float:0.5:0.95@train.optimizer=sgd")
    job = json.loads(out)
    sp = api(ctl, "GET", "/api/v1/jobs/" + job["id"])["automl"]["search_space"]
    assert sp["train.momentum"]["condition"] == {"train.optimizer": ["sgd"]}, sp
    assert wait(ctl, job["id"])["status"] == "done"


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    bins = dict(zip(("hone", "ctl", "worker", "train"),
                    (os.path.abspath(a) for a in sys.argv[1:5])))
    root = tempfile.mkdtemp(prefix="hone-cond-")
    data = os.path.join(root, "data", "blobs")  # beneath the controller's data dir (a root)
    os.makedirs(os.path.join(root, "data"))
    write_blob_idx(data, 500, 100)
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base).start()
    try:
        ds = api(ctl, "POST", "/api/v1/datasets", {"name": "blobs", "path": data})["id"]
        refusals(ctl, ds)
        optimizer_momentum(ctl, ds)
        depth(ctl, ds)
        cli(bins, ctl, ds)
        memory_fit(ctl, root)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), w.text()[-4000:]))
        raise
    finally:
        w.stop()
        rc = ctl.stop()
    assert rc == 0, "controller exited %d (under ASan: LeakSanitizer found a leak)" % rc
    shutil.rmtree(root, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
