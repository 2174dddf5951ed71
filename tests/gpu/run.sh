#!/usr/bin/env bash
# tests/gpu/run.sh: on a GPU machine, builds the CUDA backend, runs the GPU tests (CUDA vs the
# CPU references) and then bench/train_gpu.sh, in one go. Convolutions use cuDNN when it is found
# (CUDNN_ROOT, /usr/local/cuda, or PyTorch's nvidia-cudnn wheel; CMake option HONE_CUDNN); the
# path built is printed. Needs nvcc and cmake; Debian .debs in
# $HONE_DEBS (default ./.debs) are unpacked into a private prefix when system libraries are missing.
# The bench's measurements go to $OUT/bench-record.jsonl as bench record lines (bench/record.py;
# the commit from HONE_COMMIT, as the device's copy of the tree has no .git) and are compared with
# the committed record, bench/results/record.jsonl: a slowdown beyond the tolerance (10%, or
# --tolerance=F) on the same device, bench and configuration fails the run; after a good run the
# new lines are appended to the record by hand.
# Usage: tests/gpu/run.sh [--no-bench] [--no-tests] [--no-compare] [--tolerance=0.10]
#        (env: BUILD, HONE_FMNIST_DIR, OUT, HONE_COMMIT)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
DEBS=${HONE_DEBS:-$ROOT/.debs}
PREFIX=/tmp/hone-debs
RUN_TESTS=1 RUN_BENCH=1 COMPARE=1 TOLERANCE=${BENCH_TOLERANCE:-0.10}
for a in "$@"; do
  case $a in
    --no-bench) RUN_BENCH=0 ;;
    --no-tests) RUN_TESTS=0 ;;
    --no-compare) COMPARE=0 ;;
    --tolerance=*) TOLERANCE=${a#--tolerance=} ;;
    *) echo "run.sh: unknown argument $a (--no-bench, --no-tests, --no-compare, --tolerance=F)"; exit 2 ;;
  esac
done
LOG=${OUT:-$BUILD}
mkdir -p "$BUILD" "$LOG"
export PATH=/usr/local/cuda/bin:$PATH
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && export HONE_FMNIST_DIR=$ROOT/.data
# the Python-driven GPU tests (gpu_listen) read it under this name
[ -n "${HONE_FMNIST_DIR:-}" ] && export HONE_FASHION_MNIST=${HONE_FASHION_MNIST:-$HONE_FMNIST_DIR}

# ---- system libraries the whole tree's configure wants (yaml, uv, jansson, sqlite, openblas ...)
. "$ROOT/tests/gpu/debs.sh"

# ---- build: CMake for the whole tree; if another module's configure fails, build ours directly
TARGETS="test_gpu_ops test_gpu_train bench_train_gpu"
BIN_OPS= BIN_TRAIN= BIN_BENCH= BIN_TRAIN_CLI=
if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${CMAKE_EXTRA[@]}" >"$LOG/configure.log" 2>&1; then
  # the whole tree: every executable a `gpu`-labelled test runs (kernel tests, trainer tests, the
  # programs the integration-style GPU tests start) and the benches' programs
  TARGETS=all
  echo "run.sh: building $TARGETS"
  cmake --build "$BUILD" --target $TARGETS -j"$(nproc)" >"$LOG/build.log" 2>&1 ||
    { tail -40 "$LOG/build.log"; echo "run.sh: build failed"; exit 1; }
  CUDNN_LIB=$(sed -n 's/^HONE_CUDNN_LIB:FILEPATH=//p' "$BUILD/CMakeCache.txt")
  [[ $CUDNN_LIB == *NOTFOUND* ]] && CUDNN_LIB=
  BIN_OPS=$BUILD/tests/gpu/test_gpu_ops BIN_TRAIN=$BUILD/tests/gpu/test_gpu_train
  BIN_BENCH=$BUILD/bench/bench_train_gpu
  [ -x "$BUILD/train/hone-train" ] && BIN_TRAIN_CLI=$BUILD/train/hone-train
else
  tail -20 "$LOG/configure.log"
  echo "run.sh: CMake configure failed; building the CUDA backend and its tests directly"
  D=$BUILD/direct; mkdir -p "$D"
  # cuDNN as CMake's HONE_CUDNN=AUTO finds it: $CUDNN_ROOT, the toolkit, the nvidia-cudnn wheel
  CUDNN_LIB= NVCC_DNN=
  for dir in ${CUDNN_ROOT:-} /usr/local/cuda \
             "$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)"; do
    [ -n "$dir" ] && [ -e "$dir/include/cudnn.h" ] || continue
    CUDNN_LIB=$(ls "$dir"/lib*/libcudnn.so "$dir"/lib*/libcudnn.so.9 2>/dev/null | head -1)
    [ -n "$CUDNN_LIB" ] && { NVCC_DNN="-DHONE_HAVE_CUDNN=1 -I$dir/include"; break; }
  done
  INC="-I$ROOT/common -I$ROOT/kernels -I$ROOT/tests/kernels -I$ROOT/spec -I$ROOT/train ${CMAKE_PREFIX_PATH:+-I$PREFIX/usr/include -I$PREFIX/usr/include/x86_64-linux-gnu/openblas-pthread}"
  OBJS=()
  for cu in "$ROOT"/kernels/cuda/*.cu; do
    o=$D/cuda_$(basename "$cu").o; OBJS+=("$o")
    nvcc -O3 -arch=sm_90 -DHONE_HAVE_CUDA=1 $NVCC_DNN $INC -c "$cu" -o "$o" &
  done
  # the shipped trainer (train/ without main.c, and the spec schema under it) for test_gpu_train
  # and bench_train_gpu
  for c in "$ROOT"/common/hone.c "$ROOT"/kernels/dispatch.c "$ROOT"/kernels/cpu/*.c \
           "$ROOT"/tests/kernels/ref.c "$ROOT"/spec/{spec,spec_check,spec_json}.c \
           "$ROOT"/train/{idx,spec,dataset,net,checkpoint,loop}.c; do
    o=$D/$(basename "$(dirname "$c")")_$(basename "$c").o; OBJS+=("$o")  # cpu/conv.c, train/net.c
    gcc -O2 -std=gnu11 -DHONE_HAVE_CUDA=1 $INC -c "$c" -o "$o" &
  done
  wait
  LIBS="-L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lopenblas -lyaml -ljansson -lz -lm -lpthread -lstdc++"
  [ -n "$CUDNN_LIB" ] && LIBS="$LIBS $CUDNN_LIB -Wl,-rpath,$(dirname "$CUDNN_LIB")"
  gcc -O2 -std=gnu11 $INC "$ROOT/tests/gpu/test_gpu_ops.c" "${OBJS[@]}" $LIBS -o "$D/test_gpu_ops" &&
  gcc -O2 -std=gnu11 $INC "$ROOT/tests/gpu/test_gpu_train.c" "${OBJS[@]}" $LIBS -o "$D/test_gpu_train" &&
  gcc -O2 -std=gnu11 $INC "$ROOT/bench/train_gpu.c" "${OBJS[@]}" $LIBS -o "$D/bench_train_gpu" ||
    { echo "run.sh: direct build failed"; exit 1; }
  BIN_OPS=$D/test_gpu_ops BIN_TRAIN=$D/test_gpu_train BIN_BENCH=$D/bench_train_gpu
fi
echo "run.sh: built; conv path: ${CUDNN_LIB:+cuDNN ($CUDNN_LIB)}${CUDNN_LIB:-im2col + cuBLAS (no cuDNN found)}"
# cuDNN opens its engine libraries (libcudnn_engines_*.so.9) from its own folder at run time
[ -n "$CUDNN_LIB" ] && export LD_LIBRARY_PATH=$(dirname "$CUDNN_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>/dev/null

# ---- tests
FAIL=0
if [ $RUN_TESTS = 1 ]; then
  if [ -n "$BIN_OPS" ] && [ -e "$BUILD/CTestTestfile.cmake" ]; then
    (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600) 2>&1 | tee "$LOG/ctest.log" | tail -60
    grep -q "100% tests passed" "$LOG/ctest.log" || FAIL=1
  else
    "$BIN_OPS" || FAIL=1
    "$BIN_TRAIN" || FAIL=1
  fi
fi

# ---- bench, its record and the check against the committed record
SLOWER=0
if [ $RUN_BENCH = 1 ]; then
  RECORD=$LOG/bench-record.jsonl
  : >"$RECORD"
  # fp32 too (the spec's default math): its CNN epoch went 0.166 -> 0.301 s unseen (issue 31)
  MATH=${MATH:-tf32 fp32} HONE_BENCH_RECORD=$RECORD HONE_TRAIN_BIN=${BIN_TRAIN_CLI:-} \
    BENCH_BIN=$BIN_BENCH "$ROOT/bench/train_gpu.sh" 2>&1 | tee "$LOG/bench.log"
  if [ $COMPARE = 1 ]; then
    echo
    python3 "$ROOT/bench/record.py" compare --record "$ROOT/bench/results/record.jsonl" \
      --tolerance "$TOLERANCE" "$RECORD" 2>&1 | tee "$LOG/bench-compare.log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || SLOWER=1
    [ "$rc" = 1 ] && echo "run.sh: BENCH SLOWER than bench/results/record.jsonl (above; tolerance $TOLERANCE)"
    [ "$rc" -gt 1 ] && echo "run.sh: bench record compare failed (exit $rc)"
  fi
fi
[ $FAIL = 0 ] && echo "run.sh: GPU tests passed" || echo "run.sh: GPU TESTS FAILED"
[ $SLOWER = 0 ] || FAIL=1
exit $FAIL
