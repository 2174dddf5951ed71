# Shared helpers for the integration scripts (sourced, not run): failing with a message, reading a
# value out of JSON on stdin, finding the Fashion-MNIST folder (or skipping with exit 77), and
# starting the real processes: start_ctl and start_worker (the one way shell tests start them).
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {"d": d}))' "$1"; }

# Sets fm to the Fashion-MNIST folder: $HONE_FMNIST_DIR, the Debian package, or the repo's .data.
find_fmnist() {
  local src
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  fm=${HONE_FMNIST_DIR:-}
  [ -z "$fm" ] && fm=$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep train-images-idx3 | head -1 | xargs -r dirname || true)
  [ -z "$fm" ] && [ -f "$src/.data/train-images-idx3-ubyte.gz" ] && fm=$src/.data
  [ -n "$fm" ] && [ -d "$fm" ] || { echo "SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)"; exit 77; }
}

# start_ctl DIR LISTEN [FLAG...]: starts $CTL with DIR/controller.yaml, its store in DIR/data and its
# log appended to DIR/controller.log; sets ctl_pid and exports HONE_URL once /readyz answers. Called
# again on the same DIR (after a kill) it restarts on the same data.
start_ctl() {
  local dir=$1 listen=$2
  shift 2
  rm -f "$dir/port"
  "$CTL" --config "$dir/controller.yaml" --listen "$listen" --data-dir "$dir/data" \
         --port-file "$dir/port" "$@" >>"$dir/controller.log" 2>&1 &
  ctl_pid=$!
  for _ in $(seq 1 300); do [ -s "$dir/port" ] && break; sleep 0.1; done
  [ -s "$dir/port" ] || fail "controller did not write its port"
  HONE_URL="http://127.0.0.1:$(cat "$dir/port")"
  export HONE_URL
  for _ in $(seq 1 200); do curl -sf "$HONE_URL/readyz" >/dev/null && return 0; sleep 0.1; done
  fail "controller not ready"
}

# start_worker DIR NAME: a $WRK on $HONE_URL (CPU, one trainer thread: CI has 2 cores) running $TRN,
# working in DIR/w-NAME, logging to DIR/worker-NAME.log; its pid is appended to pids.
start_worker() {
  "$WRK" --controller "$HONE_URL" --name "$2" --work-dir "$1/w-$2" --device cpu --threads 1 \
         --trainer "$TRN" --lease-wait 2 >"$1/worker-$2.log" 2>&1 &
  pids+=($!)
}
