#!/usr/bin/env bash
# bench/train_gpu_profile.sh: where one training step's GPU time goes. Runs bench_train_gpu under
# Nsight Compute (clocks and caches left alone, as in a real run), skipping the set-up kernels, and
# prints each kernel's time in us for one captured step, largest first, with the step's sum.
# Usage: bench/train_gpu_profile.sh [--arch cnn] [--batch 128]
#   (env: BENCH_BIN, NCU, STEPS, PROFILE_CSV to keep the raw ncu CSV there, KPS: kernels per
#    step, at least; 40 fits mlp and cnn, a resnet needs about 400)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-$ROOT/build-gpu/bench/bench_train_gpu}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
STEPS=${STEPS:-3}
KPS=${KPS:-40}
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && export HONE_FMNIST_DIR=$ROOT/.data
[ -x "$NCU" ] || { echo "train_gpu_profile.sh: ncu not found"; exit 0; }
CSV=${PROFILE_CSV:-$(mktemp)}
# the first launches are uploads, fills and the permutation; then STEPS steps of the graph
"$NCU" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
  --launch-count $((STEPS * KPS + 8)) "$BIN" "$@" --epochs 1 --max-steps "$STEPS" >"$CSV" 2>/dev/null
python3 - "$CSV" "$STEPS" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
seq = []
for r in rows:
    v = float(r[vi].replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    v *= scale.get(r[ui], 1.0)
    seq.append((r[ki].split("(")[0].split("<")[0].replace("void ", "")[:60], v))
# the last full step: from the last gather (first kernel of a step) back
starts = [i for i, (n, _) in enumerate(seq) if "gather" in n]
if len(starts) < 2:
    sys.exit("train_gpu_profile.sh: fewer than 2 steps captured")
step = seq[starts[-2]:starts[-1]]
agg = collections.OrderedDict()
for n, v in step:
    agg.setdefault(n, [0, 0.0])
    agg[n][0] += 1
    agg[n][1] += v
print(f"{'kernel':<62}{'calls':>6}{'us':>9}")
for n, (c, v) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{n:<62}{c:>6}{v:>9.1f}")
print(f"{'step total (' + str(len(step)) + ' kernels, serialised)':<68}{sum(v for _, v in step):>9.1f}")
PY
[ -n "${PROFILE_CSV:-}" ] || rm -f "$CSV"
