#!/usr/bin/python3
"""hone-train --pack-file (packed trials in one fused step) through the real binary, on the CPU
with real Fashion-MNIST:
1. A file of three CNN trials (their own lr, seed, dropout, flip) and two bad lines (no --out; not
   a JSON array): stdout is exactly one {"event":"trial_exit","trial":i,"code":N} per line (0 for
   the trials, 2 for the bad lines, which end first), the exit status is 1, and each trial's files (metrics.jsonl
   but its timings, checkpoint.bin, model.bin, model.json, spec.yaml) equal a plain
   `hone-train ARGS` of the same arguments byte for byte.
2. A file whose trials cannot share a pack (model.hidden differs): every trial's code is 1 and
   the reason names the key.
It exits 77 (skipped) without Fashion-MNIST.
Usage: test_train_packfile.py HONE_TRAIN
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from hone_train import check, failures, same_files, sets  # noqa: E402

TRAIN = sys.argv[1]
FASHION = os.environ.get("HONE_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
SMALL = {"network": "cnn", "data.path": FASHION, "data.train_limit": 384, "data.val_size": 200,
         "data.test_limit": 300, "train.epochs": 2, "model.hidden": 32, "train.batch_size": 64}


def trial_args(out, extra):
    return ["--device", "cpu"] + sets(dict(SMALL, **extra)) + ["--out", out]


def pack(lines):
    path = os.path.join(TMP, "pack%d.txt" % len(os.listdir(TMP)))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([TRAIN, "--pack-file", path, "--threads", "2"], capture_output=True,
                       text=True, env=ENV)
    return p.returncode, p.stdout.splitlines(), p.stderr


def same_as_solo(packed, args, name):
    solo = os.path.join(TMP, name + "-solo")
    solo_args = [solo if a == packed else a for a in args]
    p = subprocess.run([TRAIN, "--threads", "2"] + solo_args, capture_output=True, text=True,
                       env=ENV)
    check(p.returncode == 0, "%s: solo run exit %d: %s" % (name, p.returncode, p.stderr))
    same_files(packed, solo, name)
    with open(os.path.join(packed, "metrics.jsonl")) as f:
        check(len(f.readlines()) == 3, "%s: want 2 epoch lines and a done line" % name)


def main():
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        print("skipped: Fashion-MNIST not found in", FASHION)
        return 77
    # 1. three trials and two bad lines
    extras = [{"train.lr": 0.02, "train.seed": 3, "model.dropout": 0.1},
              {"train.lr": 0.05, "train.seed": 9, "model.dropout": 0.3, "augment.flip": "true"},
              {"train.lr": 0.01, "train.seed": 4, "model.dropout": 0.2, "train.momentum": 0.5}]
    outs = [os.path.join(TMP, "t%d" % i) for i in range(3)]
    args = [trial_args(outs[i], extras[i]) for i in range(3)]
    lines = [json.dumps(args[0]), json.dumps(["--set", "train.lr=0.1"]), json.dumps(args[1]),
             "not json", json.dumps(args[2])]
    rc, out, err = pack(lines)
    check(rc == 1, "--pack-file with bad lines: exit %d, want 1: %s" % (rc, err))
    got = [json.loads(x) for x in out]
    want = [{"event": "trial_exit", "trial": i, "code": c} for i, c in enumerate([0, 2, 0, 2, 0])]
    check(sorted(got, key=lambda d: d["trial"]) == want, "trial_exit lines: %s" % got)
    check([g["trial"] for g in got[:2]] == [1, 3], "bad lines end first: %s" % got)
    for i in range(3):
        same_as_solo(outs[i], args[i], "trial %d" % i)
    # 2. trials that cannot share a pack
    a = trial_args(os.path.join(TMP, "x0"), {})
    b = trial_args(os.path.join(TMP, "x1"), {"model.hidden": 48})
    rc, out, err = pack([json.dumps(a), json.dumps(b)])
    got = [json.loads(x) for x in out]
    check(rc == 1 and [g["code"] for g in got] == [1, 1], "incompatible: %d %s" % (rc, got))
    check("model.hidden" in err, "incompatible: the reason names the key: %s" % err)
    return 1 if failures else 0


if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="hone-packfile-")
    try:
        code = main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print("test_train_packfile:", "ok" if code == 0 else "skipped" if code == 77 else "FAILED")
    sys.exit(code)
