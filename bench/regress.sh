#!/usr/bin/env bash
# bench/regress.sh: the training epoch of two or more commits side by side, to find where a speed
# regression came in (issue 31: the CNN epoch 0.097 -> 0.138 s). Builds bench_train_gpu of each
# commit in its own build folder (the way tests/gpu/run.sh builds: its .debs, the same CMake
# options; only that target), then runs it for ARCH at each batch and math (EPOCHS epochs, s/epoch
# the median of epochs 2..N) and prints one table, each row against the first variant's.
#
# Usage: bench/regress.sh [--prepare | --build-only] [--conv] [--device cuda|cpu] [--arch cnn]
#          [--batches "128 512"] [--maths "tf32 fp32"] [--epochs 4] [--max-steps N] VARIANT...
#   VARIANT = REF[:CMAKE_OPTION]...[+VAR=VALUE]...
#     REF: a commit (what git rev-parse takes: main, 8f89b14^) or "." (this tree as it is);
#     :-DX=Y: a CMake option of that build (main:-DHONE_CUDNN=OFF is a build of its own);
#     +VAR=VALUE: the environment of that variant's runs (.+HONE_CUDNN=OFF, the same build).
# The device machine's copy of the tree has no .git: run `bench/regress.sh --prepare VARIANT...` in
# a checkout first; it writes each commit's tree as build-regress/src/SHA.tar.gz (and the names it
# resolved to build-regress/src/refs), and the device command carries build-regress/src:
#   here:   bench/regress.sh --prepare b8b56e5 f5f4580^ 8f89b14^ 8f89b14
#   device: bench/regress.sh b8b56e5 f5f4580^ 8f89b14^ 8f89b14 . .+HONE_CUDNN=OFF \
#             .+HONE_CUDNN_MIN_C=2 .+HONE_CUDNN_LOG=1
#           (carry .debs .data build-regress/src, as tests/gpu/run.sh carries .debs and .data)
# A build that fails is reported and its variants left out (exit 1 at the end). --build-only stops
# after the builds (a second call on the warm machine then only runs). --conv also times each
# conv shape alone (bench_conv_gpu: the CNN's two layers and three ResNet-type references) in the
# builds that have it, per variant: which path is faster shape by shape. --device cpu builds without
# CUDA (-DHONE_CUDA=OFF) and runs on the CPU: a smoke test of this script (use --max-steps). Env:
# WORK (build folders, default build-regress), HONE_FMNIST_DIR, OUT (the tables are also written to
# $OUT/regress.txt and regress-conv.txt, every run's stderr to $OUT/regress-stderr.txt), JOBS
# (compiles per build).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WORK=${WORK:-$ROOT/build-regress}
PREPARE=0 BUILD_ONLY=0 CONV=0 DEVICE=cuda ARCH=cnn BATCHES="128 512" MATHS="tf32 fp32" EPOCHS=4 MAX_STEPS=0
VARIANTS=()
while [ $# -gt 0 ]; do
  case $1 in
    --prepare) PREPARE=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    --conv) CONV=1 ;;
    --device) DEVICE=$2; shift ;;
    --arch) ARCH=$2; shift ;;
    --batches) BATCHES=$2; shift ;;
    --maths) MATHS=$2; shift ;;
    --epochs) EPOCHS=$2; shift ;;
    --max-steps) MAX_STEPS=$2; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "regress.sh: unknown option $1 (--help)"; exit 2 ;;
    *) VARIANTS+=("$1") ;;
  esac
  shift
done
[ ${#VARIANTS[@]} -ge 1 ] || { echo "regress.sh: name at least one VARIANT (--help)"; exit 2; }
case $DEVICE in cuda|cpu) ;; *) echo "regress.sh: --device is cuda or cpu"; exit 2 ;; esac
[ "$EPOCHS" -ge 2 ] 2>/dev/null || { echo "regress.sh: --epochs must be 2 or more"; exit 2; }
SRC=$WORK/src
mkdir -p "$SRC"
T0=$(date +%s)

# ---- each variant's commit: resolved here with git, or from the refs file --prepare wrote
resolve() { # REF -> SHA ("." stays ".")
  local ref=$1 sha
  [ "$ref" = . ] && { echo .; return 0; }
  if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    sha=$(git -C "$ROOT" rev-parse --verify --quiet "$ref^{commit}") || return 1
    { awk -v r="$ref" '$1 != r' "$SRC/refs" 2>/dev/null; echo "$ref $sha"; } >"$SRC/refs.new"
    mv "$SRC/refs.new" "$SRC/refs"
    echo "$sha"
    return 0
  fi
  sha=$(awk -v r="$ref" '$1 == r {print $2}' "$SRC/refs" 2>/dev/null | tail -1)
  [ -n "$sha" ] && echo "$sha"
}
declare -A BUILD_OF ENV_OF OPTS_OF SHA_OF
BUILDS=()
for v in "${VARIANTS[@]}"; do
  base=${v%%+*}
  envs=""
  [ "$base" != "$v" ] && envs=$(echo "${v#*+}" | tr '+' ' ')
  ref=${base%%:*}
  opts=""
  [ "$ref" != "$base" ] && opts=$(echo "${base#*:}" | tr ':' ' ')
  [ "$DEVICE" = cpu ] && opts="$opts -DHONE_CUDA=OFF"
  sha=$(resolve "$ref") || sha=""
  if [ -z "$sha" ]; then
    echo "regress.sh: cannot resolve '$ref' (no git here: run bench/regress.sh --prepare $ref in a checkout and carry build-regress)"
    exit 2
  fi
  if [ "$sha" != . ] && [ ! -s "$SRC/$sha.tar.gz" ]; then
    git -C "$ROOT" archive --format=tar.gz -o "$SRC/$sha.tar.gz" "$sha" 2>/dev/null || {
      echo "regress.sh: no source of $ref ($sha): run --prepare where git is and carry build-regress"
      exit 2
    }
  fi
  tag=$([ "$sha" = . ] && echo tree || echo "${sha:0:10}")
  [ -n "$opts" ] && tag="$tag-$(echo "$opts" | md5sum | cut -c1-8)"
  BUILD_OF[$v]=$tag ENV_OF[$v]=$envs OPTS_OF[$tag]=$opts SHA_OF[$tag]=$sha
  [[ " ${BUILDS[*]:-} " == *" $tag "* ]] || BUILDS+=("$tag")
done
if [ $PREPARE = 1 ]; then
  echo "regress.sh: prepared $(ls "$SRC"/*.tar.gz 2>/dev/null | wc -l) source tree(s) in $SRC ($(du -sh "$SRC" | cut -f1)); carry ${WORK#$ROOT/}"
  cat "$SRC/refs" 2>/dev/null
  exit 0
fi

# ---- builds, side by side: each its own source copy and build folder, only bench_train_gpu
export PATH=/usr/local/cuda/bin:$PATH
. "$ROOT/tests/gpu/debs.sh"
NB=${#BUILDS[@]}
JOBS=${JOBS:-$(( ($(nproc) + NB - 1) / NB + 1 ))}
echo "regress.sh: building ${BUILDS[*]} ($NB builds, -j$JOBS each)"
for tag in "${BUILDS[@]}"; do
  opts=${OPTS_OF[$tag]} sha=${SHA_OF[$tag]}
  (
    B=$WORK/b-$tag
    mkdir -p "$B"
    if [ "$sha" = . ]; then
      S=$ROOT
    else
      S=$WORK/s-${sha:0:10}
      [ -e "$S/CMakeLists.txt" ] || { mkdir -p "$S" && tar -xzf "$SRC/$sha.tar.gz" -C "$S"; }
    fi
    targets=bench_train_gpu
    [ $CONV = 1 ] && [ -e "$S/bench/conv_gpu.c" ] && targets="$targets bench_conv_gpu"
    # shellcheck disable=SC2086
    cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=Release "${CMAKE_EXTRA[@]}" $opts >"$B/configure.log" 2>&1 &&
      cmake --build "$B" --target $targets -j"$JOBS" >"$B/build.log" 2>&1
    echo $? >"$B/rc"
  ) &
done
wait
FAILED=0
for tag in "${BUILDS[@]}"; do
  B=$WORK/b-$tag
  if [ "$(cat "$B/rc" 2>/dev/null)" != 0 ] || [ ! -x "$B/bench/bench_train_gpu" ]; then
    tail -20 "$B/configure.log" "$B/build.log" 2>/dev/null
    echo "regress.sh: build $tag failed ($B): its variants are left out"
    FAILED=1
  fi
done
echo "regress.sh: built in $(( $(date +%s) - T0 )) s"
[ $BUILD_ONLY = 1 ] && exit $FAILED

# ---- runs: every variant, math and batch; the first variant is the baseline of the ratio
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && export HONE_FMNIST_DIR=$ROOT/.data
[ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null
RES=$(mktemp)
ERRS=${OUT:-$WORK}/regress-stderr.txt
: >"$ERRS"
for v in "${VARIANTS[@]}"; do
  B=$WORK/b-${BUILD_OF[$v]}
  [ -x "$B/bench/bench_train_gpu" ] || continue
  lib=$(sed -n 's/^HONE_CUDNN_LIB:FILEPATH=//p' "$B/CMakeCache.txt" 2>/dev/null)
  ldp=${LD_LIBRARY_PATH:-}
  [ -n "$lib" ] && [[ $lib != *NOTFOUND* ]] && ldp=$(dirname "$lib")${ldp:+:$ldp}
  path="im2col"
  [ -n "$lib" ] && [[ $lib != *NOTFOUND* ]] && path="cudnn"
  [ "$DEVICE" = cpu ] && path="cpu"
  shown=0
  for m in $MATHS; do
    for b in $BATCHES; do
      # shellcheck disable=SC2086
      line=$(env LD_LIBRARY_PATH="$ldp" ${ENV_OF[$v]} "$B/bench/bench_train_gpu" --device "$DEVICE" \
        --arch "$ARCH" --batch "$b" --epochs "$EPOCHS" --math "$m" --max-steps "$MAX_STEPS" \
        2>"$B/run.err" | grep '^RESULT')
      [ -n "$line" ] || { tail -3 "$B/run.err"; line="RESULT s_per_epoch=nan first_epoch=nan acc=nan"; }
      echo "$v|${path}|$m|$b|$line" | tee -a "$RES"
      # the backend's own lines (HONE_CUDNN=OFF's notice, HONE_CUDNN_LOG=1's algorithms): all of
      # them to $ERRS, the first run's here
      sed "s/^/[$v $m $b] /" "$B/run.err" >>"$ERRS"
      [ $shown = 0 ] && grep '^hone cuda' "$B/run.err" | sed 's/^/  /'
      shown=1
    done
  done
done
python3 - "$RES" <<'PY' | tee "${OUT:-$WORK}/regress.txt"
import sys
rows = []
for l in open(sys.argv[1]):
    v, path, m, b, res = l.rstrip("\n").split("|", 4)
    f = dict(kv.split("=", 1) for kv in res.split()[1:])
    rows.append((v, path, m, int(b), float(f["s_per_epoch"]), float(f["first_epoch"]), float(f["acc"])))
base = {}
for v, path, m, b, s, first, acc in rows:
    base.setdefault((m, b), s)
print(f"\n{'variant':<34}{'build':>7}{'math':>6}{'batch':>6}{'s/epoch':>9}{'first':>8}{'acc':>8}{'x first':>9}")
for v, path, m, b, s, first, acc in rows:
    r = s / base[(m, b)] if base[(m, b)] == base[(m, b)] and base[(m, b)] > 0 else float("nan")
    print(f"{v:<34}{path:>7}{m:>6}{b:>6}{s:>9.4f}{first:>8.3f}{acc:>8.4f}{r:>9.2f}")
PY
rm -f "$RES"

# ---- --conv: each conv shape's passes alone (bench_conv_gpu, in builds that have it), per variant
if [ $CONV = 1 ] && [ "$DEVICE" = cuda ]; then
  RES=$(mktemp)
  for v in "${VARIANTS[@]}"; do
    B=$WORK/b-${BUILD_OF[$v]}
    [ -x "$B/bench/bench_conv_gpu" ] || continue
    lib=$(sed -n 's/^HONE_CUDNN_LIB:FILEPATH=//p' "$B/CMakeCache.txt" 2>/dev/null)
    ldp=${LD_LIBRARY_PATH:-}
    [ -n "$lib" ] && [[ $lib != *NOTFOUND* ]] && ldp=$(dirname "$lib")${ldp:+:$ldp}
    bargs=()
    for b in $BATCHES; do bargs+=(--batch "$b"); done
    for m in $MATHS; do
      # shellcheck disable=SC2086
      env LD_LIBRARY_PATH="$ldp" ${ENV_OF[$v]} "$B/bench/bench_conv_gpu" --math "$m" "${bargs[@]}" \
        2>>"$ERRS" | grep '^RESULT' | sed "s/^/$v|/" >>"$RES"
    done
  done
  python3 - "$RES" <<'PY' | tee "${OUT:-$WORK}/regress-conv.txt"
import collections, sys
cells, variants = collections.OrderedDict(), []
for l in open(sys.argv[1]):
    v, res = l.rstrip("\n").split("|", 1)
    f = dict(kv.split("=", 1) for kv in res.split()[1:])
    if v not in variants:
        variants.append(v)
    key = (f["shape"], f["n"], f["math"])
    cells.setdefault(key, {})[v] = "%s/%s" % (f["fwd_us"], f["fwd_bwd_us"])
print("\nconv passes alone, us a replay: forward / forward + backward")
print(f"{'shape':<15}{'n':>5}{'math':>6}" + "".join(f"{v[:22]:>24}" for v in variants))
for (shape, n, math), row in cells.items():
    print(f"{shape:<15}{n:>5}{math:>6}" + "".join(f"{row.get(v, '-'):>24}" for v in variants))
PY
  rm -f "$RES"
fi
echo "regress.sh: $(( $(date +%s) - T0 )) s in all"
exit $FAILED
