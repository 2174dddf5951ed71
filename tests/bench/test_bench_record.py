#!/usr/bin/env python3
"""tests/bench/test_bench_record.py: bench/record.py, the bench record and its check, on made-up
record lines (no GPU, no timing): a slowdown beyond the tolerance fails, one within it passes, a
faster run passes, another device is never compared, a configuration without history is reported
and not failed, PyTorch's rows are reported and not failed, the last line of a key is the one
compared, --tolerance moves the bound; RESULT lines become record lines; the committed record's
seed lines are the parse of the bench/results tables they name; bench/train_gpu.sh appends its
measurements to $HONE_BENCH_RECORD.
Usage: test_bench_record.py bench/record.py"""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(SCRIPT))
H100 = "NVIDIA H100 80GB HBM3"
FAILS = []


def line(value, impl="hone", arch="cnn", batch=128, math="tf32", device=H100, commit="aaaaaaa",
         acc=0.9, gate=None):
    return {"commit": commit, "date": "2026-11-28", "device": device, "bench": "train_gpu",
            "config": {"impl": impl, "arch": arch, "batch": batch, "math": math, "epochs": 5},
            "metric": "s_per_epoch", "value": value, "acc": acc,
            "gate": (not impl.startswith("torch")) if gate is None else gate}


def write(dirname, name, lines):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")
    return path


def compare(record, new, *extra):
    with tempfile.TemporaryDirectory() as d:
        r = write(d, "record.jsonl", record)
        n = write(d, "new.jsonl", new)
        p = subprocess.run([sys.executable, SCRIPT, "compare", "--record", r, *extra, n],
                           capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def check(name, cond, out=""):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond:
        FAILS.append(name)
        print(out)


def row_of(out, needle):
    return next((l for l in out.splitlines() if needle in l), "")


def main():
    base = [line(0.1000), line(0.0800, batch=512), line(0.0200, arch="mlp")]

    rc, out = compare(base, [line(0.1150)])  # 15% slower than 0.1000
    check("a slowdown beyond 10% fails", rc == 1 and "FAIL" in out and "SLOWER" in out, out)
    check("the failure names the configuration and both figures",
          "hone cnn 128 tf32 5" in row_of(out, "FAIL") and "0.1000 -> 0.1150" in out, out)

    rc, out = compare(base, [line(0.1050), line(0.0830, batch=512), line(0.0190, arch="mlp")])
    check("within noise (5%, 3.75%, -5%) passes", rc == 0 and "ok: no measurement" in out, out)

    rc, out = compare(base, [line(0.0700)])
    check("faster is reported, not failed", rc == 0 and "faster" in row_of(out, "0.0700"), out)

    rc, out = compare(base, [line(0.5000, device="NVIDIA H200")])
    check("another device is not compared", rc == 0 and "new device" in out, out)
    rc, out = compare(base + [line(0.0500, device="NVIDIA H200")], [line(0.1050)])
    check("a faster device's record does not judge this one's run",
          rc == 0 and "ok" in row_of(out, "0.1050") and "0.1000" in row_of(out, "0.1050"), out)

    rc, out = compare(base, [line(0.5000, math="bf16")])
    check("a new configuration without history is reported, not failed",
          rc == 0 and "new (no record)" in row_of(out, "bf16"), out)

    rc, out = compare(base + [line(0.7, impl="torch-compile")], [line(0.9, impl="torch-compile")])
    check("a PyTorch (reference) row slower is reported, not failed",
          rc == 0 and "not gated" in out, out)

    rc, out = compare([line(0.2000, commit="old"), line(0.1000, commit="newer")], [line(0.1200)])
    check("the last record line of a key is the one compared",
          rc == 1 and "newer" in row_of(out, "0.1200"), out)

    rc, out = compare(base, [line(0.1150)], "--tolerance", "0.2")
    check("--tolerance 0.2 lets 15% pass", rc == 0, out)
    rc, out = compare(base, [line(0.1030)], "--tolerance", "0.02")
    check("--tolerance 0.02 fails 3%", rc == 1, out)
    rc, out = compare(base, [])
    check("a run without measurements is an error (exit 2), not a pass",
          rc == 2 and "no measurements" in out, out)
    rc, out = compare(base, [line(0.1)], "--tolerance", "-1")
    check("a negative tolerance is refused (exit 2)", rc == 2 and "--tolerance" in out, out)

    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.jsonl")
        with open(bad, "w") as f:
            f.write("{not json\n")
        p = subprocess.run([sys.executable, SCRIPT, "compare", "--record", bad, bad],
                           capture_output=True, text=True, timeout=60)
        check("a broken record is an error naming the file and line (exit 2)",
              p.returncode == 2 and "bad.jsonl:1" in p.stderr, p.stdout + p.stderr)

        results = os.path.join(d, "results.txt")
        with open(results, "w") as f:
            f.write("epoch 1: 0.2 s\n"
                    "RESULT impl=hone arch=cnn batch=128 math=tf32 s_per_epoch=0.1374 "
                    "first_epoch=0.5 img_per_s=435832 acc=0.9058 epochs=5\n"
                    "RESULT impl=torch-eager arch=cnn batch=128 math=default s_per_epoch=0.9192 "
                    "first_epoch=2.0 img_per_s=65168 acc=0.9032 epochs=5\n")
        p = subprocess.run([sys.executable, SCRIPT, "lines", "--bench", "train_gpu", "--commit",
                            "abc1234", "--device", H100, results],
                           capture_output=True, text=True, timeout=60)
        got = [json.loads(l) for l in p.stdout.splitlines()]
        check("RESULT lines become record lines", p.returncode == 0 and len(got) == 2 and
              got[0]["config"] == {"impl": "hone", "arch": "cnn", "batch": 128, "math": "tf32",
                                   "epochs": 5} and got[0]["value"] == 0.1374 and
              got[0]["commit"] == "abc1234" and got[0]["device"] == H100 and
              got[0]["acc"] == 0.9058 and got[0]["gate"] and not got[1]["gate"],
              p.stdout + p.stderr)
        env = dict(os.environ, HONE_COMMIT="fromenv", HONE_BENCH_DEVICE="Some GPU")
        p = subprocess.run([sys.executable, SCRIPT, "lines", "--bench", "b", results],
                           capture_output=True, text=True, timeout=60, env=env)
        got = [json.loads(l) for l in p.stdout.splitlines()]
        check("HONE_COMMIT and HONE_BENCH_DEVICE name the commit and device",
              got and got[0]["commit"] == "fromenv" and got[0]["device"] == "Some GPU",
              p.stdout + p.stderr)

    # bench/train_gpu.sh appends its measurements to $HONE_BENCH_RECORD (a stand-in bench binary
    # prints bench_train_gpu's RESULT line for the arguments it gets)
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "bench_train_gpu")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\n"
                    "echo \"epoch 1: 0.2 s\"\n"
                    "echo \"RESULT impl=hone arch=$2 batch=$4 math=$8 s_per_epoch=0.1$4 "
                    "first_epoch=0.5 img_per_s=1000 acc=0.9 epochs=$6\"\n")
        os.chmod(fake, 0o755)
        rec = os.path.join(d, "record.jsonl")
        env = dict(os.environ, BENCH_BIN=fake, HONE_TRAIN_BIN=os.path.join(d, "none"),
                   TORCH_MODES="none", ARCHS="cnn", BATCHES="128 512", EPOCHS="3",
                   MATH="tf32 fp32",
                   HONE_BENCH_RECORD=rec, HONE_COMMIT="c0ffee1", HONE_BENCH_DEVICE="Test GPU")
        p = subprocess.run(["bash", os.path.join(ROOT, "bench", "train_gpu.sh")],
                           capture_output=True, text=True, timeout=120, env=env)
        got = [json.loads(l) for l in open(rec)] if os.path.exists(rec) else []
        check("bench/train_gpu.sh writes one record line a measurement to $HONE_BENCH_RECORD",
              p.returncode == 0 and len(got) == 4 and
              [(l["config"]["batch"], l["config"]["math"]) for l in got] ==
              [(128, "tf32"), (128, "fp32"), (512, "tf32"), (512, "fp32")] and
              got[2]["value"] == 0.1512 and got[0]["config"]["epochs"] == 3 and
              all(l["commit"] == "c0ffee1" and l["device"] == "Test GPU" and
                  l["bench"] == "train_gpu" for l in got), p.stdout + p.stderr)

    # the committed record: every line parses, and the seed lines are what their source tables say
    record = os.path.join(ROOT, "bench", "results", "record.jsonl")
    lines = [json.loads(l) for l in open(record) if l.strip()]
    check("the committed record holds the H100 CNN figures",
          any(l["device"] == H100 and l["config"].get("arch") == "cnn" and
              l["config"].get("impl") == "hone" for l in lines))
    seeds = {}
    for l in lines:
        src = l.get("source", "").split(" ")[0]
        if src.startswith("bench/results/") and src.endswith(".txt"):
            seeds.setdefault((src, l["commit"], l["device"], l["date"], l["source"]), []).append(l)
    for (src, commit, device, date, source), want in seeds.items():
        p = subprocess.run([sys.executable, SCRIPT, "table", "--bench", "train_gpu", "--commit",
                            commit, "--device", device, "--date", date, "--source", source,
                            os.path.join(ROOT, src)], capture_output=True, text=True, timeout=60)
        got = [json.loads(l) for l in p.stdout.splitlines()]
        check("record lines from %s are its table" % src, got == want and len(got) == 16,
              p.stdout + p.stderr)
    # the newest run in the record (its last line's commit) is no slower than the runs before it
    latest = lines[-1]["commit"]
    rc, out = compare([l for l in lines if l["commit"] != latest],
                      [l for l in lines if l["commit"] == latest])
    check("the record's latest lines (%s) pass against the record before them" % latest,
          rc == 0, out)

    if FAILS:
        print("%d check(s) failed: %s" % (len(FAILS), "; ".join(FAILS)))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
