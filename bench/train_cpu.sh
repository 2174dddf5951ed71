#!/bin/sh
# bench/train_cpu.sh: seconds per epoch, CPU seconds and accuracy of hone-train on the CPU backend
# for the reference MLP and CNN on Fashion-MNIST (batch 128, 2 threads by default). A benchmark,
# not a test: it asserts nothing. Pin cores with CPUS=0,1 (taskset) to reduce noise.
#   usage: bench/train_cpu.sh path/to/hone-train [epochs]
#   env:   THREADS (2), CPUS (unset: no pinning), NETS ("mlp cnn"), EXTRA (more --set flags)
set -eu
BIN=${1:?usage: bench/train_cpu.sh path/to/hone-train [epochs]}
EPOCHS=${2:-1}
THREADS=${THREADS:-2}
NETS=${NETS:-mlp cnn}
EXTRA=${EXTRA:-}
PIN=""
if [ -n "${CPUS:-}" ]; then
    PIN="taskset -c $CPUS"
fi
TMP=$(mktemp -d /tmp/hone-bench-cpu-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

printf '%-4s %7s %9s %9s %9s %9s %9s\n' net epochs s/epoch wall_s cpu_s val_acc test_acc
for net in $NETS; do
    # shellcheck disable=SC2086 # PIN and EXTRA are word lists on purpose
    /usr/bin/time -f '%e %U %S' -o "$TMP/time" $PIN "$BIN" --device cpu --threads "$THREADS" \
        --set network="$net" --set model.hidden=128 --set train.batch_size=128 \
        --set train.epochs="$EPOCHS" $EXTRA >"$TMP/out" 2>"$TMP/err" ||
        { echo "$net: hone-train failed:" >&2; cat "$TMP/err" >&2; exit 1; }
    python3 - "$net" "$EPOCHS" "$TMP/out" "$TMP/time" <<'PY'
import json, sys
net, epochs, out, tfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = [json.loads(l) for l in open(out) if l.startswith("{")]
eps = [l for l in lines if "epoch" in l and "event" not in l]
done = [l for l in lines if l.get("event") == "done"]
wall, user, sys_ = (float(x) for x in open(tfile).read().split()[-3:])
spe = sum(e["seconds"] for e in eps) / max(len(eps), 1)
val = eps[-1]["val_accuracy"] if eps else float("nan")
test = done[-1]["test_accuracy"] if done else float("nan")
print("%-4s %7d %9.2f %9.2f %9.2f %9.4f %9.4f" % (net, epochs, spe, wall, user + sys_, val, test))
PY
done
echo "(s/epoch: training steps only, from hone-train's JSON; wall_s and cpu_s: the whole run," \
    "including data loading and evaluation)"
