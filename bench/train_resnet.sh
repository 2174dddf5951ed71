#!/usr/bin/env bash
# bench/train_resnet.sh: on a GPU machine, ResNet-18 on 32x32 RGB images at batch 512, bf16: hone-train
# (the product, data from a packed file) against PyTorch bf16 channels_last, eager and torch.compile, in
# one run, on the same packed file. Data: Fashion-MNIST written as an RGB image folder at 32x32 (random
# tints and backgrounds, tests/data/fmnist_rgb.py), packed once by hone-pack (its images/s printed too).
# Both sides: SGD momentum 0.9 Nesterov, lr 0.1 cosine, weight decay 5e-4, crop (padding 4) + flip, all
# 60000 training images, last partial batch dropped; test accuracy after EPOCHS on the 10000 test images.
# s/epoch = median of epochs 2..N.
# Env: HONE_TRAIN_BIN (default build-gpu/train/hone-train), HONE_PACK_BIN (default
#      build-gpu/data/hone-pack), HONE_FMNIST_DIR, EPOCHS (5), BATCH (512), MATHS ("bf16"),
#      TORCH_MODES ("eager,compile"; "none" skips PyTorch), WORK (scratch folder, default /tmp/hone-resnet),
#      HONE_BENCH_RECORD: a file the measurements are appended to as bench record lines (bench/record.py).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TRAIN_BIN=${HONE_TRAIN_BIN:-$ROOT/build-gpu/train/hone-train}
PACK_BIN=${HONE_PACK_BIN:-$ROOT/build-gpu/data/hone-pack}
EPOCHS=${EPOCHS:-5}
BATCH=${BATCH:-512}
MATHS=${MATHS:-bf16}
TORCH_MODES=${TORCH_MODES:-eager,compile}
WORK=${WORK:-/tmp/hone-resnet}
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && export HONE_FMNIST_DIR=$ROOT/.data
FMNIST=${HONE_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$WORK"
RES=$WORK/results.txt
: >"$RES"

# ---- data: the RGB folder, packed once
if [ ! -s "$WORK/rgb32.hpk" ]; then
  rm -rf "$WORK/rgb32"
  HONE_FMNIST_DIR=$FMNIST python3 "$ROOT/tests/data/fmnist_rgb.py" "$WORK/rgb32" --size 32 \
    --train 60000 --test 10000 || exit 1
  "$PACK_BIN" "$WORK/rgb32" "$WORK/rgb32.hpk" --size 32x32 --rgb | tail -1
fi

# ---- hone-train (its conv path: cuDNN when the binary links it and it started, else im2col)
CUDNN_SO=$(ldd "$TRAIN_BIN" 2>/dev/null | awk '/libcudnn\.so/ {print $3; exit}')
for m in $MATHS; do
  "$TRAIN_BIN" --device cuda --set network=resnet18 --set data.format=image_folder \
    --set data.path="$WORK/rgb32" --set data.packed="$WORK/rgb32.hpk" --set model.input_size=32 \
    --set data.channels=3 --set data.val_size=0 --set train.epochs="$EPOCHS" \
    --set train.batch_size="$BATCH" --set train.lr=0.1 --set train.weight_decay=5e-4 \
    --set train.math="$m" ${HONE_TRAIN_EXTRA:-} 2>"$WORK/hone-train.err" |
    python3 "$ROOT/bench/hone_train_result.py" arch=resnet18 batch="$BATCH" math="$m" | tee -a "$RES" || tail -5 "$WORK/hone-train.err"
  if [ -z "$CUDNN_SO" ]; then
    echo "hone-train conv path: im2col + cuBLAS (not linked with cuDNN)"
  elif grep -q "cuDNN unavailable" "$WORK/hone-train.err"; then
    echo "hone-train conv path: im2col + cuBLAS (cuDNN failed to start: $WORK/hone-train.err)"
  else
    echo "hone-train conv path: cuDNN ($CUDNN_SO)"
  fi
done

# ---- PyTorch
if [ "$TORCH_MODES" != none ]; then
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/train_resnet_torch.py" "$WORK/rgb32.hpk" \
    --epochs "$EPOCHS" --batch "$BATCH" --modes "$TORCH_MODES" | tee -a "$RES"
fi

python3 - "$RES" "$EPOCHS" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in open(sys.argv[1]) if l.startswith("RESULT")]
ref = {r["impl"]: float(r["s_per_epoch"]) for r in rows}
print(f"\n{'impl':<15}{'math':>6}{'s/epoch':>10}{'img/s':>10}{'x eager':>9}{'x compile':>11}{'acc@' + sys.argv[2]:>9}")
for r in rows:
    s = float(r["s_per_epoch"])
    e, c = ref.get("torch-eager"), ref.get("torch-compile")
    print(f"{r['impl']:<15}{r['math']:>6}{s:>10.3f}{r['img_per_s']:>10}{(e / s if e else 0):>9.2f}"
          f"{(c / s if c else 0):>11.2f}{float(r['acc']):>9.4f}")
PY
if [ -n "${HONE_BENCH_RECORD:-}" ]; then
  python3 "$ROOT/bench/record.py" lines --bench train_resnet "$RES" >>"$HONE_BENCH_RECORD" ||
    echo "train_resnet.sh: could not write the bench record $HONE_BENCH_RECORD"
fi
