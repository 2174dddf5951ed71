#!/usr/bin/env bash
# Lease to first training step: the time from the moment the worker has a train job (it starts
# hone-train, or writes the job to its resident hone-train --serve) to the end of the trainer's
# first training step (its "first step done at" stderr line, CLOCK_REALTIME), for a fresh process
# against a resident trainer that has run one job on the same data before (a second trial of a
# worker: context and dataset already on the device). The reference CNN on Fashion-MNIST, one epoch;
# the median of RUNS tries each. CPU always; --device cuda as well when a GPU is there (or forced
# with HONE_BENCH_CUDA=1). Prints both times and the ratio. The worker's own share (lease reply to
# argv) is the same in both and not in these numbers.
# Usage: bench/resident.sh [RUNS]   (default 5; HONE_BENCH_BUILD: the build folder to use or make)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
build=${HONE_BENCH_BUILD:-build-bench-resident}
if [ ! -x "$build/train/hone-train" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target hone-train >/dev/null
fi
fm=${HONE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$fm/train-images-idx3-ubyte.gz" ] || { echo "resident: no Fashion-MNIST at $fm"; exit 77; }
devices=cpu
if [ "${HONE_BENCH_CUDA:-}" = 1 ] || "$build/train/hone-train" --list-devices | grep -q '"index"'; then
  devices="cpu cuda"
fi
for dev in $devices; do
  python3 - "$build/train/hone-train" "$fm" "$dev" "$runs" <<'PY'
import datetime, json, os, re, statistics, subprocess, sys, tempfile, time
train, fm, dev, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tmp = tempfile.mkdtemp(prefix="hone-bench-resident-")
args = ["--device", dev, "--set", "network=cnn", "--set", "data.path=" + fm,
        "--set", "train.epochs=1"]
if dev == "cpu":  # a CPU epoch of all 60,000 images takes long; the first step is what counts
    args += ["--set", "data.train_limit=2048", "--set", "data.test_limit=1000"]
first_re = re.compile(r"first step done at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")


def first_step(text):
    """The "first step done at" line's ISO 8601 UTC time as Unix seconds (None without one)."""
    m = first_re.search(text)
    if not m:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()

def fresh(i):
    t0 = time.time()
    p = subprocess.run([train] + args + ["--out", "%s/f%d" % (tmp, i)], capture_output=True,
                       text=True)
    t = first_step(p.stderr)
    assert p.returncode == 0 and t is not None, p.stderr[-2000:]
    return t - t0

err = open(os.path.join(tmp, "serve.err"), "w+")
srv = subprocess.Popen([train, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=err, text=True)

def resident(i):
    pos = err.tell()
    t0 = time.time()
    srv.stdin.write(json.dumps({"run": args + ["--out", "%s/r%d" % (tmp, i)]}) + "\n")
    srv.stdin.flush()
    while True:
        d = json.loads(srv.stdout.readline())
        if d.get("event") == "exit":  # ("accepted" and "alive" lines come before)
            break
    assert d["code"] == 0, open(err.name).read()[-2000:]
    err.flush()
    with open(err.name) as f:
        f.seek(pos)
        return first_step(f.read()) - t0

resident(-1)  # the worker's first trial: loads the data; later ones find it
f = statistics.median(fresh(i) for i in range(runs))
r = statistics.median(resident(i) for i in range(runs))
srv.stdin.close()
srv.wait()
print("resident (%s): lease to first step: fresh hone-train %.1f ms, resident %.1f ms, "
      "ratio %.1fx" % (dev, f * 1000, r * 1000, f / r))
PY
done
