"""bench/race.sh's Hone sides on the CPU, through the real stack (issue 31): `hone local`, dataset and
experiment create, an AutoML job, the default spec trained alone for the best trial's epochs, and
the JSON lines and table read from the jobs. Checks what the lead's GPU race relies on: each line's
figures agree with each other and with what was asked (trials, epochs, the default spec's epochs
equal to the best trial's, a train job's test accuracy, the swept space handed to the PyTorch side
is the one Hone's job swept), the clock stays inside the budget, and bad options are refused before
anything starts. No PyTorch here: bench/race_torch.py is the GPU machine's.
Usage: test_race_bench.py path/to/hone (hone-controller, hone-worker, hone-train in the build)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RACE = os.path.join(ROOT, "bench", "race.sh")
FMNIST = os.environ.get("HONE_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")


def race(build, args, extra_env=None, timeout=600):
    env = dict(os.environ, HONE_BUILD=build, **(extra_env or {}))
    env.pop("HONE_URL", None)
    return subprocess.run(["bash", RACE] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=timeout)


def main():
    hone = os.path.abspath(sys.argv[1])
    build = os.path.dirname(os.path.dirname(hone))  # BUILD/cli/hone
    if not os.path.exists(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")):
        print("skipped: no Fashion-MNIST in " + FMNIST)
        return 77
    out = tempfile.mkdtemp(prefix="hone-race-test-")

    # refusals name the fix and start nothing
    for bad, word in ((["--device", "tpu"], "--device"), (["--sides", "hone,jax"], "--sides"),
                      (["--budget-minutes", "0"], "--budget-minutes"), (["--bogus"], "--bogus"),
                      (["--network", "vgg"], "--network"), (["--data", out], "--data")):
        r = race(build, bad + ["--out", out], timeout=60)
        assert r.returncode != 0 and word in r.stderr, (bad, r.returncode, r.stderr)
        assert not os.path.exists(os.path.join(out, "race.jsonl")), bad
    r = race(build, ["--out"], timeout=60)
    assert r.returncode == 2 and "--out needs a value" in r.stderr, (r.returncode, r.stderr)

    # two random trials of 2 epochs each, width 8 fixed, on a slice of the data
    args = ["--device", "cpu", "--budget-minutes", "3", "--sides", "hone,default", "--workers", "1",
            "--threads", "1", "--train-limit", "256", "--val-size", "200", "--test-limit", "200",
            "--spec", "model.width=8", "--spec", "train.epochs=2", "--data", FMNIST, "--out", out]
    r = race(build, args, {"HONE_RACE_AUTOML_ARGS": "--algorithm random --max-recommendations 2 "
                                                   "--max-parallel 1 --remove-param model.width"})
    assert r.returncode == 0, (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    with open(os.path.join(out, "race.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    assert [x["side"] for x in rows] == ["hone", "default-spec"], rows
    h, d = rows
    for x in rows:
        assert x["bench"] == "race" and x["network"] == "resnet18" and x["device"] == "cpu", x
        assert x["budget_minutes"] == 3.0 and x["status"] == "done", x
        for k in ("test_accuracy", "best_val_accuracy"):
            assert isinstance(x[k], float) and 0.0 <= x[k] <= 1.0, (k, x)
        assert x["gpu_util_mean"] is None, x  # no nvidia-smi samples on the CPU
    assert h["budget_s"] == 180.0 and 0 < h["wall_s"] <= 180.0 + 30, h
    assert h["trials"] == 2 and h["epochs"] == 4 and h["best_epochs"] == 2, h
    assert h["algorithm"] == "random" and h["trials_failed"] == 0, h
    assert h["tested_job_id"] and h["best_trial"] in (0, 1), h
    assert set(h["best_config"]) and "model.width" not in h["best_config"], h
    assert 0 < h["search_started_s"] < h["wall_s"], h
    # the default spec alone: a train job (not the experiment's AutoML) for the best trial's epochs
    assert h["tested_epochs"] == 2, h
    assert d["trials"] == 1 and d["epochs"] == h["tested_epochs"] and d["job_id"] != h["job_id"], d
    # the PyTorch side sweeps what Hone's job swept (model.width removed), from the resolved spec
    with open(os.path.join(out, "race-defaults.json")) as f:
        dfl = json.load(f)
    assert "model.width" not in dfl["default_hyperparameters"], dfl["default_hyperparameters"]
    assert set(h["best_config"]) <= set(dfl["default_hyperparameters"]), dfl
    assert dfl["spec"]["data.train_limit"] == 256 and dfl["spec"]["model.width"] == 8, dfl["spec"]
    assert dfl["spec"]["train.math"] == "bf16" and dfl["spec"]["data.val_size"] == 200, dfl["spec"]
    # the table: a row per side and the comparison line
    assert "default-spec" in r.stdout and "over the default spec alone (2 epochs)" in r.stdout, \
        r.stdout
    # nothing left running, and the scratch folder (the stack's data) removed after a good run
    scratch = r.stdout.split("scratch ", 1)[1].split(",", 1)[0].split(";", 1)[0].strip()
    assert scratch.startswith("/tmp/hone-race.") and not os.path.exists(scratch), scratch
    ps = subprocess.run(["ps", "-eo", "args"], stdout=subprocess.PIPE, text=True).stdout
    assert scratch not in ps, ps
    shutil.rmtree(out)
    print("race bench plumbing ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
