#!/usr/bin/env bash
# Packed trials: seconds per epoch of the reference CNN (network=cnn) on Fashion-MNIST, 1 trial
# alone on a hone-train --serve --listen server, then PACK trials (default 8; different lr and
# seed) at once on one such server, each over its own connection (tests/lib/hone_listen.py). The
# data is loaded once before the timed runs (the server's dataset cache), so both sides time
# training only. Prints a table (the solo epoch time, each packed trial's mean epoch time, the
# pack's wall time per epoch: from the first request to the last trial's done line, over the
# epochs) and the same as one JSON line. Issue 9's goal: the pack's wall time per epoch at most 2x
# the solo epoch on one H100.
# --fused: the server gangs the PACK requests into ONE fused step (--pack-window-ms 200 --pack-max
# PACK: hone_train_run_pack, batched GEMMs and convolutions across the trials) instead of running
# them side by side on their own streams; the pack's wall time then leaves out the 200 ms window.
# Usage: bench/packed.sh [--fused] [--device cpu|cuda] [PACK] [EPOCHS]   (default: cuda when a GPU
#        is there, 8 trials, 3 epochs; HONE_BENCH_BUILD: the build folder to use or make; on the
#        CPU the trials train on 4096 images, --threads 1 each; HONE_BENCH_MATH: train.math of
#        every trial, default the spec's fp32)
set -euo pipefail
cd "$(dirname "$0")/.."
dev=""
fused=0
while [ $# -gt 0 ]; do
  case "$1" in
    --fused) fused=1; shift ;;
    --device) dev=$2; shift 2 ;;
    *) break ;;
  esac
done
pack=${1:-8}
epochs=${2:-3}
build=${HONE_BENCH_BUILD:-build-bench-packed}
if [ ! -x "$build/train/hone-train" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target hone-train >/dev/null
fi
fm=${HONE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$fm/train-images-idx3-ubyte.gz" ] || { echo "packed: no Fashion-MNIST at $fm"; exit 77; }
if [ -z "$dev" ]; then
  dev=cpu
  "$build/train/hone-train" --list-devices | grep -q '"index"' && dev=cuda
fi
python3 - "$build/train/hone-train" "$fm" "$dev" "$pack" "$epochs" "$fused" <<'PY'
import json, os, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "lib"))
from hone_listen import Conn

train, fm, dev, pack, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), \
    int(sys.argv[5])
fused = sys.argv[6] == "1"
window_ms = 200 if fused else 0
tmp = tempfile.mkdtemp(prefix="hone-bench-packed-")
sock = os.path.join(tmp, "s.sock")
base = ["--device", dev, "--set", "network=cnn", "--set", "data.path=" + fm,
        "--set", "train.epochs=%d" % epochs]
if os.environ.get("HONE_BENCH_MATH"):
    base += ["--set", "train.math=" + os.environ["HONE_BENCH_MATH"]]
if dev == "cpu":
    base += ["--threads", "1", "--set", "data.train_limit=4096", "--set", "data.test_limit=1000"]
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
err = open(os.path.join(tmp, "serve.err"), "w")
gang = ["--pack-window-ms", str(window_ms), "--pack-max", str(max(pack, 1))] if fused else []
srv = subprocess.Popen([train, "--serve", "--listen", sock, "--serve-cache", "1"] + gang,
                       stdin=subprocess.DEVNULL, stderr=err, env=env)
for _ in range(600):
    if os.path.exists(sock):
        break
    time.sleep(0.05)


def trial(i, name, res):
    c = Conn(sock)
    args = base + ["--set", "train.seed=%d" % (i + 1), "--set",
                   "train.lr=%g" % (0.01 * (1 + i % 4)), "--out", os.path.join(tmp, name)]
    out, logs, ex = c.job(args)
    c.close()
    assert ex and ex["code"] == 0, (ex, logs[-5:])
    secs = [d["seconds"] for d in out if "seconds" in d]
    res[i] = (sum(secs) / len(secs), time.monotonic())


warm = [None]
trial(0, "warm", warm)  # loads the data once (later trials hit the cache) and warms the device
solo = [None]
trial(0, "solo", solo)
res = [None] * pack
t0 = time.monotonic()
ths = [threading.Thread(target=trial, args=(i, "p%d" % i, res)) for i in range(pack)]
for t in ths:
    t.start()
for t in ths:
    t.join()
wall = (max(r[1] for r in res) - t0 - window_ms / 1000.0) / epochs
srv.terminate()
srv.wait()
if fused:
    with open(err.name) as f:
        assert ("%d jobs packed in one fused step" % pack) in f.read() or pack == 1, \
            "the server did not gang the %d requests" % pack
per = [r[0] for r in res]
print("packed (%s, cnn, %d epochs%s):" % (dev, epochs, ", fused" if fused else ""))
print("  %-28s %8.3f s" % ("solo epoch", solo[0][0]))
for i, s in enumerate(per):
    print("  %-28s %8.3f s" % ("packed trial %d epoch" % i, s))
print("  %-28s %8.3f s  (%.2fx solo; %d trials)" % ("pack wall time per epoch", wall,
                                                     wall / solo[0][0], pack))
print(json.dumps({"bench": "packed", "device": dev, "fused": fused, "trials": pack,
                  "math": os.environ.get("HONE_BENCH_MATH", "fp32"),
                  "epochs": epochs,
                  "solo_epoch_s": round(solo[0][0], 4),
                  "packed_epoch_s": [round(s, 4) for s in per],
                  "pack_wall_per_epoch_s": round(wall, 4),
                  "ratio_to_solo": round(wall / solo[0][0], 3)}))
PY
