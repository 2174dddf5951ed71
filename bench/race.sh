#!/usr/bin/env bash
# bench/race.sh: Hone's AutoML against Optuna + PyTorch on one GPU, at the same wall-clock budget
# (start-up included), on the same dataset, network family, split sizes and swept space; then
# Hone's default spec trained alone for as many epochs as the AutoML best trial had. The sides run
# one after another:
#   1. hone: `hone local --device D` (controller, workers, trainer server) from a cold start,
#      dataset create on the IDX folder, experiment create (--network, train.math), automl start
#      with what is left of the budget; the clock runs from the start of `hone local` to the
#      AutoML job's end.
#   2. default-spec: on the same stack, `hone train start` of the experiment's default spec for
#      the epochs of the AutoML trial whose test accuracy it reports (the best; with a budget, the
#      best finished) (--default-epochs N to choose); not on the clock.
#   3. optuna-torch: bench/race_torch.py (TPE + HyperbandPruner over PyTorch with the data on the
#      GPU, bf16, channels_last) sweeping the space Hone's job swept, from the same resolved spec;
#      the clock runs from the start of its Python process.
# Each side's GPU utilisation is the mean of nvidia-smi's samples (every 500 ms) over its clock.
# Prints one table and writes one JSON line per side to OUT/race.jsonl, and the resolved spec and
# swept space the PyTorch side used to OUT/race-defaults.json: `--sides torch --defaults
# OUT/race-defaults.json` runs that side alone later (no Hone stack), on the same space.
#
# Usage: bench/race.sh [--budget-minutes 5] [--device cuda|cpu] [--network resnet18|resnet34]
#          [--data DIR] [--out DIR] [--sides hone,default,torch] [--math bf16]
#          [--train-limit N] [--val-size N] [--test-limit N] [--spec KEY=VALUE]...
#          [--default-epochs N] [--torch-max-epochs N] [--torch-compile] [--torch-jobs N] [--seed N]
#          [--workers N] [--threads N] [--defaults FILE] [--automl-args "FLAGS"]
# Env: HONE_BUILD (the build folder holding cli/hone: default build-gpu, else build-rel, else
#      build), PYTHON (the Python with torch and optuna for the PyTorch side; default python3),
#      HONE_RACE_AUTOML_ARGS (flags for `hone automl start` instead of --budget-minutes LEFT, e.g.
#      "--algorithm bohb --R 3 --nu 3"), HONE_FMNIST_DIR, RACE_GPU (the GPU nvidia-smi samples, 0),
#      RACE_KEEP=1 (keep the scratch folder, /tmp/hone-race.*, which a good run with --out removes),
#      HONE_COMMIT (the commit recorded, where the tree has no .git).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUDGET_MIN=5 DEVICE=cuda NETWORK=resnet18 MATH=bf16 SIDES=hone,default,torch
DATA= OUTDIR= TRAIN_LIMIT= VAL_SIZE= TEST_LIMIT= DEFAULT_EPOCHS= TORCH_EPOCHS= COMPILE= SEED=1
TORCH_JOBS=1
WORKERS= THREADS= DEFAULTS= AUTOML_EXTRA=
SPECS=()
usage() { sed -n '/^# Usage:/,/^# Env:/p' "$0" | sed 's/^# \{0,1\}//' | sed '$d'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --torch-compile|-h|--help) ;;
    --*) [ $# -ge 2 ] || { echo "race.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case $1 in
    --budget-minutes) BUDGET_MIN=$2; shift ;;
    --device) DEVICE=$2; shift ;;
    --network) NETWORK=$2; shift ;;
    --math) MATH=$2; shift ;;
    --data) DATA=$2; shift ;;
    --out) OUTDIR=$2; shift ;;
    --sides) SIDES=$2; shift ;;
    --train-limit) TRAIN_LIMIT=$2; shift ;;
    --val-size) VAL_SIZE=$2; shift ;;
    --test-limit) TEST_LIMIT=$2; shift ;;
    --spec) SPECS+=("$2"); shift ;;
    --default-epochs) DEFAULT_EPOCHS=$2; shift ;;
    --torch-max-epochs) TORCH_EPOCHS=$2; shift ;;
    --torch-compile) COMPILE=1 ;;
    --torch-jobs) TORCH_JOBS=$2; shift ;;
    --seed) SEED=$2; shift ;;
    --workers) WORKERS=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --defaults) DEFAULTS=$2; shift ;;
    --automl-args) AUTOML_EXTRA=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "race.sh: unknown option $1" >&2; usage ;;
  esac
  shift
done
case $DEVICE in cuda|cpu) ;; *) echo "race.sh: --device must be cuda or cpu" >&2; exit 2 ;; esac
case $NETWORK in resnet18|resnet34) ;; *) echo "race.sh: --network must be resnet18 or resnet34" >&2; exit 2 ;; esac
awk -v b="$BUDGET_MIN" 'BEGIN { exit !(b + 0 > 0) }' ||
  { echo "race.sh: --budget-minutes must be a positive number" >&2; exit 2; }
for s in ${SIDES//,/ }; do
  case $s in hone|default|torch) ;; *) echo "race.sh: --sides takes hone, default, torch" >&2; exit 2 ;; esac
done
has_side() { [[ ",$SIDES," == *",$1,"* ]]; }
BUDGET_S=$(awk -v b="$BUDGET_MIN" 'BEGIN { printf "%.1f", b * 60 }')
PY=${PYTHON:-python3}
REPORT="python3 $ROOT/bench/race_report.py"

# ---- the build, and the libraries tests/gpu/run.sh used for it on a bare GPU machine
if [ -z "${HONE_BUILD:-}" ]; then
  for b in build-gpu build-rel build; do
    [ -x "$ROOT/$b/cli/hone" ] && { HONE_BUILD=$ROOT/$b; break; }
  done
fi
HONE=${HONE_BUILD:-$ROOT/build}/cli/hone
# a Hone stack for the hone and default sides, and for the resolved spec and space without --defaults
NEED_STACK=
if has_side hone || has_side default || [ -z "$DEFAULTS" ]; then NEED_STACK=1; fi
[ -z "$NEED_STACK" ] || [ -x "$HONE" ] ||
  { echo "race.sh: $HONE missing: build first (or set HONE_BUILD)" >&2; exit 1; }
ML=/tmp/hone-debs/usr/lib/x86_64-linux-gnu
[ -d "$ML" ] && export LD_LIBRARY_PATH=$ML:$ML/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDNN_LIB=$(sed -n 's/^HONE_CUDNN_LIB:FILEPATH=//p' "$HONE_BUILD/CMakeCache.txt" 2>/dev/null)
[ -n "$CUDNN_LIB" ] && [[ $CUDNN_LIB != *NOTFOUND* ]] &&
  export LD_LIBRARY_PATH=$(dirname "$CUDNN_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -z "${HONE_FMNIST_DIR:-}" ] && [ -d "$ROOT/.data" ] && HONE_FMNIST_DIR=$ROOT/.data
DATA=${DATA:-${HONE_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}}
[ -e "$DATA/train-images-idx3-ubyte.gz" ] || [ -e "$DATA/train-images-idx3-ubyte" ] ||
  { echo "race.sh: no Fashion-MNIST IDX files in $DATA (--data DIR)" >&2; exit 1; }
DATA=$(cd "$DATA" && pwd)

WORK=$(mktemp -d /tmp/hone-race.XXXXXX)
OUTDIR=${OUTDIR:-$WORK}
mkdir -p "$OUTDIR"
RES=$OUTDIR/race.jsonl
: >"$RES"
echo "race.sh: $NETWORK on $DATA, ${BUDGET_MIN} min a side on $DEVICE; scratch $WORK, results $RES"

# ---- what it started, stopped on any exit (errors, Ctrl-C)
LOCAL_PID= SMI_PID= TORCH_PID= WAIT_PID=
stop_smi() { [ -n "$SMI_PID" ] && kill "$SMI_PID" 2>/dev/null && wait "$SMI_PID" 2>/dev/null; SMI_PID=; }
stop_stack() {
  if [ -n "$LOCAL_PID" ]; then
    kill -TERM "$LOCAL_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$LOCAL_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$LOCAL_PID" 2>/dev/null
    wait "$LOCAL_PID" 2>/dev/null
    LOCAL_PID=
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in $TORCH_PID $WAIT_PID; do kill -TERM "$p" 2>/dev/null; done
  stop_smi
  stop_stack
  for p in $TORCH_PID $WAIT_PID; do wait "$p" 2>/dev/null; done
  # the scratch folder (the stack's data, every trial's model) goes after a good run with --out;
  # it stays for a look otherwise
  if [ "$rc" = 0 ] && [ "$OUTDIR" != "$WORK" ] && [ -z "${RACE_KEEP:-}" ]; then
    rm -rf "$WORK"
  else
    echo "race.sh: scratch folder kept: $WORK" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "race.sh: interrupted; stopping what it started" >&2; exit 130' INT TERM
die() { echo "race.sh: $*" >&2; exit 1; }

start_smi() {  # $1: the samples' file
  : >"$1"
  if command -v nvidia-smi >/dev/null && [ "$DEVICE" = cuda ]; then
    nvidia-smi -i "${RACE_GPU:-0}" --query-gpu=utilization.gpu --format=csv,noheader,nounits \
      -lms 500 >"$1" 2>/dev/null &
    SMI_PID=$!
  fi
}
now() { date +%s.%N; }
# Runs "$@" in the background and waits for it, so that Ctrl-C reaches the trap at once.
bg_wait() { "$@" & WAIT_PID=$!; wait "$WAIT_PID"; local rc=$?; WAIT_PID=; return $rc; }
# `hone --json ...` into file $1, its "id" printed
hone_json() {
  local f=$1; shift
  bg_wait "$HONE" --json "$@" >"$f" 2>"$f.err" || { cat "$f.err" >&2; die "hone $* failed"; }
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$f"
}

# ---- the Hone stack (for the hone and default sides, and for the resolved spec and space)
if [ -n "$DEFAULTS" ]; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["spec"]; d["default_hyperparameters"]' \
    "$DEFAULTS" 2>/dev/null || die "--defaults $DEFAULTS: not the JSON of hone experiment automl-defaults"
  cp "$DEFAULTS" "$WORK/defaults.json"
fi
start_stack() {  # a cold Hone stack, the dataset, the experiment, its resolved spec and space
  T0_HONE=$(now)
  start_smi "$WORK/util-hone.txt"
  LOCAL_ARGS=(local --json --port 0 --device "$DEVICE" --data-dir "$WORK/hone-data" --data-root "$DATA")
  [ -n "$WORKERS" ] && LOCAL_ARGS+=(--workers "$WORKERS")
  [ -n "$THREADS" ] && LOCAL_ARGS+=(--threads "$THREADS")
  "$HONE" "${LOCAL_ARGS[@]}" >"$WORK/local.out" 2>"$WORK/local.err" &
  LOCAL_PID=$!
  for _ in $(seq 1 600); do
    [ -s "$WORK/local.out" ] && break
    kill -0 "$LOCAL_PID" 2>/dev/null || { cat "$WORK/local.err" >&2; die "hone local ended"; }
    sleep 0.1
  done
  export HONE_URL
  HONE_URL=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' \
    "$WORK/local.out") || die "hone local printed no URL"
  echo "race.sh: hone local at $HONE_URL ($(python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(d["workers"], "workers,", d["gpus"], "GPU(s)")' "$WORK/local.out"))"
  DS=$(hone_json "$WORK/ds.json" dataset create --name fmnist-race --type image_classification \
    --format idx --path "$DATA") || exit 1
  EXP_SPECS=(--spec "train.math=$MATH")
  [ -n "$TRAIN_LIMIT" ] && EXP_SPECS+=(--spec "data.train_limit=$TRAIN_LIMIT")
  [ -n "$VAL_SIZE" ] && EXP_SPECS+=(--spec "data.val_size=$VAL_SIZE")
  [ -n "$TEST_LIMIT" ] && EXP_SPECS+=(--spec "data.test_limit=$TEST_LIMIT")
  for s in ${SPECS[@]+"${SPECS[@]}"}; do EXP_SPECS+=(--spec "$s"); done
  EXP=$(hone_json "$WORK/exp.json" experiment create --name race --network "$NETWORK" \
    --train-dataset "$DS" "${EXP_SPECS[@]}") || exit 1
  [ -z "$DEFAULTS" ] && { bg_wait "$HONE" --json experiment automl-defaults "$EXP" >"$WORK/defaults.json" ||
    die "automl-defaults failed"; }
}
[ -n "$NEED_STACK" ] && start_stack

measure_epoch() {  # seconds an epoch of the whole training set takes one worker (empty: unknown)
  local train=$HONE_BUILD/train/hone-train share
  [ -x "$train" ] || return 1
  share=$(python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); g=d["gpus"]; w=d["workers"]; print(-(-w // g) if g else 1)' "$WORK/local.out") || return 1
  python3 - "$WORK/defaults.json" "$WORK/measure.json" "$DATA" <<'PY' || return 1
import json, sys
spec = json.load(open(sys.argv[1]))["spec"]
keep = {k: v for k, v in spec.items() if k.split(".")[0] in ("network", "model", "data") or k in ("train.batch_size", "train.math")}
# the dataset's folder: the experiment's spec leaves data.path to the dataset
keep.update({"data.path": sys.argv[3], "data.train_limit": 16384, "data.val_size": 256,
             "data.test_limit": 256, "train.epochs": 2})
json.dump(keep, open(sys.argv[2], "w"))
PY
  "$train" --spec "$WORK/measure.json" --device "$DEVICE" 2>"$WORK/measure.err" |
    python3 -c 'import json,sys
ips = 0
for l in sys.stdin:
    try: ips = json.loads(l).get("images_per_second") or ips
    except ValueError: pass
n = json.load(open(sys.argv[1]))["spec"]
n = (n.get("data.train_limit") or 60000) - (n.get("data.val_size") or 0)
n = min(n, 60000 - (json.load(open(sys.argv[1]))["spec"].get("data.val_size") or 0))
print(round(n / ips * 1.15 * int(sys.argv[2]), 3) if ips else "")' "$WORK/defaults.json" "$share"
}

# ---- 1. hone
BEST_EPOCHS= FAILED=
if has_side hone; then
  if [ -n "${HONE_RACE_AUTOML_ARGS:-}" ]; then
    read -r -a AUTOML_ARGS <<<"$HONE_RACE_AUTOML_ARGS"
  else
    # the epoch time the search is sized from, measured as hone demo does, on the clock: the
    # trainer on 16384 images for 2 epochs at the experiment's network, math and batch, scaled to
    # the training set and to the workers sharing each GPU (--epoch-seconds S skips it)
    if [[ " $AUTOML_EXTRA " != *" --epoch-seconds "* ]] && [ -z "${RACE_NO_MEASURE:-}" ]; then
      if EPS=$(measure_epoch) && [ -n "$EPS" ]; then
        AUTOML_EXTRA="$AUTOML_EXTRA --epoch-seconds $EPS"
        echo "race.sh: hone: an epoch measured at $EPS s a worker"
      else
        echo "race.sh: hone: the epoch time could not be measured; the search learns it:" >&2
        tail -5 "$WORK/measure.err" >&2 2>/dev/null
      fi
    fi
    # what is left of the budget after the start-up (awk: no bc on the GPU machine)
    LEFT=$(awk -v b="$BUDGET_S" -v t0="$T0_HONE" -v t="$(now)" 'BEGIN { printf "%.2f", (b - (t - t0)) / 60 }')
    awk -v l="$LEFT" 'BEGIN { exit !(l > 0) }' || die "the start-up took the whole budget"
    AUTOML_ARGS=(--budget-minutes "$LEFT")
    if [ -n "$AUTOML_EXTRA" ]; then  # e.g. "--algorithm bohb --epoch-seconds 3"
      read -r -a EXTRA <<<"$AUTOML_EXTRA"
      AUTOML_ARGS+=("${EXTRA[@]}")
    fi
  fi
  JOB=$(hone_json "$WORK/job-start.json" automl start --experiment "$EXP" --name race \
    --seed "$SEED" "${AUTOML_ARGS[@]}") || exit 1
  SKIP=$(wc -l <"$WORK/util-hone.txt")  # samples before the search: gpu_util_search leaves them out
  echo "race.sh: hone: AutoML job $JOB (${AUTOML_ARGS[*]}), started $(awk -v t0="$T0_HONE" -v t="$(now)" 'BEGIN { printf "%.1f", t - t0 }') s after hone local"
  # a search that overruns its budget by a tenth (at least 30 s) is canceled: the race has a clock
  HARD=$(awk -v b="$BUDGET_S" -v t0="$T0_HONE" 'BEGIN { g = b / 10; if (g < 30) g = 30; printf "%.1f", t0 + b + g }')
  bg_wait $REPORT wait "$HONE_URL" "$JOB" "$HARD" >"$WORK/job-end.txt" || die "waiting for $JOB failed"
  stop_smi
  echo "race.sh: hone: the search ended: $(cat "$WORK/job-end.txt")"
  $REPORT hone "$HONE_URL" "$JOB" "$T0_HONE" "$BUDGET_S" "$WORK/util-hone.txt" "$SKIP" \
    "$WORK/defaults.json" >"$WORK/hone.json" || die "reading job $JOB failed"
  cat "$WORK/hone.json" >>"$RES"
  # the epochs of the trial whose test accuracy the hone line gives (the best, or the best finished)
  BEST_EPOCHS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("tested_epochs") or d.get("best_epochs") or "")' "$WORK/hone.json")
fi
stop_smi

# ---- 2. the default spec alone, for the best trial's epochs
if has_side default; then
  EPOCHS=${DEFAULT_EPOCHS:-$BEST_EPOCHS}
  [ -z "$EPOCHS" ] && EPOCHS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["train.epochs"])' "$WORK/defaults.json")
  echo "race.sh: default-spec: the experiment's default spec for $EPOCHS epochs"
  # an experiment of its own with the same specs: a train job on an experiment whose AutoML is
  # enabled runs AutoML (TAO's way)
  EXP_DEF=$(hone_json "$WORK/exp-default.json" experiment create --name race-default \
    --network "$NETWORK" --train-dataset "$DS" "${EXP_SPECS[@]}") || exit 1
  T0_DEF=$(now)
  start_smi "$WORK/util-default.txt"
  bg_wait "$HONE" --json train start --experiment "$EXP_DEF" --name default-spec \
    --spec "train.epochs=$EPOCHS" --wait >"$WORK/default-job.json" 2>"$WORK/default-job.err" ||
    { cat "$WORK/default-job.err" >&2; die "the default spec's train job failed"; }
  stop_smi
  $REPORT default "$WORK/default-job.json" "$T0_DEF" "$EPOCHS" "$WORK/util-default.txt" \
    >"$WORK/default.json" || die "reading the default spec's job failed"
  cat "$WORK/default.json" >>"$RES"
fi
stop_stack
cp "$WORK/defaults.json" "$OUTDIR/race-defaults.json"

# ---- 3. Optuna + PyTorch
if has_side torch; then
  TORCH_ARGS=(--defaults "$WORK/defaults.json" --data "$DATA" --budget-s "$BUDGET_S"
              --device "$DEVICE" --seed "$SEED" --jobs "$TORCH_JOBS" --out "$WORK/torch.json")
  [ -n "$TORCH_EPOCHS" ] && TORCH_ARGS+=(--max-epochs "$TORCH_EPOCHS")
  [ -n "$COMPILE" ] && TORCH_ARGS+=(--compile)
  [ -n "$THREADS" ] && TORCH_ARGS+=(--threads "$THREADS")
  echo "race.sh: optuna-torch: $PY bench/race_torch.py (TPE + HyperbandPruner)"
  start_smi "$WORK/util-torch.txt"
  T0_TORCH=$(now)
  PYTHONUNBUFFERED=1 "$PY" "$ROOT/bench/race_torch.py" --start-time "$T0_TORCH" "${TORCH_ARGS[@]}" \
    >"$WORK/torch.out" 2> >(tee "$WORK/torch.err" | sed 's/^/  /' >&2) &
  TORCH_PID=$!
  wait "$TORCH_PID"
  TRC=$?
  TORCH_PID=
  stop_smi
  if [ -s "$WORK/torch.json" ]; then
    python3 - "$WORK/torch.json" "$(python3 "$ROOT/bench/race_report.py" util "$WORK/util-torch.txt")" >>"$RES" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["gpu_util_mean"] = json.loads(sys.argv[2])
print(json.dumps(r))
PY
  else
    echo "race.sh: the PyTorch side failed (exit $TRC): $(tail -3 "$WORK/torch.out" "$WORK/torch.err" 2>/dev/null)" >&2
    FAILED="$FAILED torch"
  fi
fi

# ---- one record: the common fields on each line (bench/record.py's names: commit, date, device as
# nvidia-smi names it), then the table
COMMIT=${HONE_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
[ "$COMMIT" != unknown ] && [ -z "${HONE_COMMIT:-}" ] &&
  [ -n "$(git -C "$ROOT" status --porcelain -uno 2>/dev/null)" ] && COMMIT=$COMMIT-dirty
NAME=$( { [ "$DEVICE" = cuda ] && nvidia-smi -i "${RACE_GPU:-0}" --query-gpu=name --format=csv,noheader 2>/dev/null; } || echo cpu)
python3 - "$RES" "$COMMIT" "${NAME:-cpu}" "$NETWORK" "$BUDGET_MIN" <<'PY'
import json, sys, time
path, commit, name, net, budget = sys.argv[1:6]
rows = [json.loads(l) for l in open(path) if l.strip()]
with open(path, "w") as f:
    for r in rows:
        r = {"bench": "race", "commit": commit, "date": time.strftime("%Y-%m-%d", time.gmtime()),
             "time": time.strftime("%H:%M:%SZ", time.gmtime()), "device": name, "network": net,
             "budget_minutes": float(budget), **r}
        f.write(json.dumps(r) + "\n")
PY
echo
$REPORT table "$RES"
echo "race.sh: JSON lines in $RES"
[ -z "$FAILED" ] || die "failed:$FAILED"
