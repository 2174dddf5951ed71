#!/usr/bin/env bash
# tests/gpu/test_gpu_cudnn_env.sh: the CUDA backend's runtime switches of the cuDNN path
# (kernels/cuda/conv_cudnn.cu, used by bench/regress.sh to find where the CNN's epoch went) do
# what they say, on the shipped trainer (bench_train_gpu, a few CNN steps): HONE_CUDNN_LOG=1 names
# each conv shape's algorithms, HONE_CUDNN=OFF runs no shape on cuDNN, HONE_CUDNN_MIN_C=33 takes
# the 32-channel second layer off it; the three train to the same loss. The 1-channel first layer
# (9 taps) runs the direct kernels in every case (kernels/cuda/conv.cu's dnn_for).
# Exits 77 (skipped) without a GPU, without cuDNN in the build or without Fashion-MNIST.
# Usage: test_gpu_cudnn_env.sh BENCH_TRAIN_GPU
set -u
BIN=$1
DIR=${HONE_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -e "$DIR/train-images-idx3-ubyte.gz" ] || [ -e "$DIR/train-images-idx3-ubyte" ] ||
  { echo "no Fashion-MNIST in $DIR: skipped"; exit 77; }
ldd "$BIN" 2>/dev/null | grep -q libcudnn || { echo "built without cuDNN: skipped"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run() { # NAME ENV...: 30 steps of the CNN at batch 128, tf32
  local name=$1
  shift
  env "$@" "$BIN" --arch cnn --batch 128 --epochs 1 --max-steps 30 --math tf32 --data "$DIR" \
    >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  [ $rc = 77 ] && { echo "no GPU: skipped"; exit 77; }
  [ $rc = 0 ] || { echo "FAIL: $name: exit $rc"; cat "$T/$name.err"; exit 1; }
}
run log HONE_CUDNN_LOG=1 HONE_CUDNN_MIN_C=0 # every shape cuDNN takes, on cuDNN
run off HONE_CUDNN=OFF HONE_CUDNN_LOG=1
run minc HONE_CUDNN_MIN_C=33 HONE_CUDNN_LOG=1
FAIL=0
check() { # WHAT COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAIL=1; fi
}
has() { grep -q -- "$2" "$T/$1.err"; }
hasnt() { ! grep -q -- "$2" "$T/$1.err"; }
for pass in fwd bwd_data bwd_filter; do
  check "HONE_CUDNN_LOG=1 names conv2's $pass algorithm" has log "cudnn tf32 n128 c32 14x14 k64 r3x3 s1 p1 $pass: algo"
done
check "conv1 (9 taps) runs the direct kernels, not cuDNN" hasnt log "cudnn tf32 n128 c1 "
check "HONE_CUDNN=OFF says so" has off "HONE_CUDNN=OFF: convolutions use im2col"
check "HONE_CUDNN=OFF runs no shape on cuDNN" hasnt off "hone cuda: cudnn "
check "HONE_CUDNN_MIN_C=33 takes conv2 off cuDNN" hasnt minc "cudnn tf32 n128 c32 "
loss() { sed -n 's/^epoch 1: .* loss \([0-9.e+-]*\),.*/\1/p' "$T/$1.out"; }
echo "loss after 30 steps: cudnn $(loss log), im2col $(loss off), min_c 33 $(loss minc)"
close() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 0.02 * abs(a))" "$1" "$2"; }
check "im2col trains as cuDNN does (loss within 2%)" close "$(loss log)" "$(loss off)"
check "min_c 33 trains as cuDNN does (loss within 2%)" close "$(loss log)" "$(loss minc)"
exit $FAIL
