#!/bin/bash
# bench/small_detect.sh: the defaults sized to the data (issue 30) on a small detection set, on the
# CPU: gen_detect.py's images, 600 in train/ and no val/ (so hone-train carves 60 for test and takes
# validation from the rest), detectnet_v2 at model.width 16, 128 px, EPOCHS epochs (default 8), with
# tests/integration/test_detect.py's optimiser (adamw, lr 0.008, weight decay 1e-4).
#   before: the old defaults, with the validation split given by hand as the old controller needed
#           (data.val_size 60: 480 training images) and batch 128 (3 steps an epoch)
#   after:  the defaults sized to this set (data.val_size 54, train.batch_size 8: 60 steps an epoch)
# Prints each run's last epoch line (val_map), its best val_map and wall seconds.
# usage: bench/small_detect.sh BUILD-DIR [EPOCHS] [THREADS]
set -euo pipefail
build=${1:?usage: small_detect.sh BUILD-DIR [EPOCHS] [THREADS]}
epochs=${2:-8}
threads=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/hone-small-detect.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/../tests/data/gen_detect.py" --count 600 --size 128 "$work/kitti" >/dev/null
rm -rf "$work/kitti/val"
printf 'network: detectnet_v2\ndata:\n  format: kitti\n  path: %s\nmodel:\n  width: 16\n' \
    "$work/kitti" >"$work/spec.yaml"
printf 'train:\n  optimizer: adamw\n  lr: 0.008\n  weight_decay: 0.0001\n' >>"$work/spec.yaml"
run() { # name, then --set pairs
    local name=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    "$build/train/hone-train" --spec "$work/spec.yaml" --set train.epochs="$epochs" "$@" \
        --out "$work/$name" --device cpu --threads "$threads" >"$work/$name.log" 2>&1
    t1=$(date +%s.%N)
    python3 - "$name" "$work/$name.log" "$t0" "$t1" <<'PY'
import json, sys
name, log, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
eps = [json.loads(l) for l in open(log) if l.startswith('{"epoch"')]
print(json.dumps({"run": name, "epochs": len(eps), "val_map": [round(e["val_map"], 4) for e in eps],
                  "best_val_map": max(e["val_map"] for e in eps), "seconds": round(t1 - t0, 1)}))
PY
}
run before --set data.val_size=60 --set train.batch_size=128
run after --set data.val_size=54 --set train.batch_size=8
