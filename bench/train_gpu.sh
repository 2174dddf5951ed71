#!/usr/bin/env bash
# bench/train_gpu.sh: on a GPU machine, times the shipped training epoch (bench_train_gpu, the
# train/ library in process: MLP and CNN, batch 128 and 512, 5 epochs, data on the GPU, one CUDA
# graph per step) and the same networks in PyTorch eager and torch.compile(mode="reduce-overhead"),
# then prints one table: seconds per epoch (median of epochs 2..5), images/s, speed-up over each
# PyTorch mode, test accuracy after 5.
# The product path is timed too: hone-train --device cuda on the same networks (CNN with
# model.hidden=128, the reference fc-128; SGD momentum 0.9, lr 0.01 constant, no weight decay, all
# 60000 images for training), its per-epoch "seconds" from the JSON lines, median of epochs 2..N.
# Env: BENCH_BIN (default build-gpu/bench/bench_train_gpu), HONE_TRAIN_BIN (default
#      build-gpu/train/hone-train; skipped when missing), HONE_FMNIST_DIR, EPOCHS, MATH,
#      TORCH_MODES (default "eager,compile"; "none" skips PyTorch), ARCHS, BATCHES,
#      HONE_BENCH_RECORD: a file the measurements are appended to as bench record lines
#      (bench/record.py: commit from HONE_COMMIT or git, device from nvidia-smi).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BENCH_BIN:-$ROOT/build-gpu/bench/bench_train_gpu}
EPOCHS=${EPOCHS:-5}
MATH=${MATH:-tf32}
ARCHS=${ARCHS:-mlp cnn}
BATCHES=${BATCHES:-128 512}
TORCH_MODES=${TORCH_MODES:-eager,compile}
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && export HONE_FMNIST_DIR=$ROOT/.data
TRAIN_BIN=${HONE_TRAIN_BIN:-$ROOT/build-gpu/train/hone-train}
RES=$(mktemp)
for arch in $ARCHS; do
  for b in $BATCHES; do
    for m in $MATH; do
      "$BIN" --arch "$arch" --batch "$b" --epochs "$EPOCHS" --math "$m" | tee -a "$RES" | grep RESULT
    done
  done
done
# hone-train itself: one RESULT line per run, from its JSON lines
if [ -x "$TRAIN_BIN" ]; then
  for arch in $ARCHS; do
    for b in $BATCHES; do
      m=${MATH%% *}
      "$TRAIN_BIN" --device "${HONE_TRAIN_DEVICE:-cuda}" --set network=$arch --set model.hidden=$([ $arch = cnn ] && echo 128 || echo 256) \
        --set data.path="${HONE_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}" --set data.val_size=0 \
        --set train.epochs=$EPOCHS --set train.batch_size=$b --set train.lr=0.01 \
        --set train.lr_schedule=constant --set train.weight_decay=0 --set train.math=$m \
        ${HONE_TRAIN_EXTRA:-} 2>/dev/null |
        python3 "$ROOT/bench/hone_train_result.py" arch=$arch batch=$b math=$m | tee -a "$RES"
    done
  done
else
  echo "train_gpu.sh: $TRAIN_BIN missing, skipping the hone-train rows"
fi
if [ "$TORCH_MODES" != none ]; then
  if python3 -c 'import torch' 2>/dev/null; then
    PYTHONUNBUFFERED=1 python3 "$ROOT/bench/train_gpu_torch.py" --epochs "$EPOCHS" \
      --arch "$(echo $ARCHS | tr ' ' ,)" --batch "$(echo $BATCHES | tr ' ' ,)" \
      --modes "$TORCH_MODES" | tee -a "$RES"
  else
    echo "train_gpu.sh: PyTorch missing, skipping the PyTorch columns"
  fi
fi
python3 - "$RES" <<'PY'
import sys, re
rows = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in open(sys.argv[1]) if l.startswith("RESULT")]
ref = {(r["arch"], r["batch"], r["impl"]): float(r["s_per_epoch"]) for r in rows}
print(f"\n{'impl':<16}{'arch':<5}{'batch':>6}{'math':>8}{'s/epoch':>9}{'img/s':>10}{'x eager':>9}{'x r-o':>8}{'acc@' + rows[0]['epochs'] if rows else 'acc':>8}")
for r in rows:
    s = float(r["s_per_epoch"])
    e = ref.get((r["arch"], r["batch"], "torch-eager"))
    c = ref.get((r["arch"], r["batch"], "torch-compile"))
    fe = f"{e / s:.1f}" if e else "-"
    fc = f"{c / s:.1f}" if c else "-"
    print(f"{r['impl']:<16}{r['arch']:<5}{r['batch']:>6}{r['math']:>8}{s:>9.4f}{float(r['img_per_s']):>10.0f}{fe:>9}{fc:>8}{float(r['acc']):>8.4f}")
PY
if [ -n "${HONE_BENCH_RECORD:-}" ]; then
  python3 "$ROOT/bench/record.py" lines --bench train_gpu "$RES" >>"$HONE_BENCH_RECORD" ||
    echo "train_gpu.sh: could not write the bench record $HONE_BENCH_RECORD"
fi
rm -f "$RES"
