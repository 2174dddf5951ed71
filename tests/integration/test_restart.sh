#!/usr/bin/env bash
# Crash and return: a real controller and two real workers run an AutoML search; the controller is
# killed (SIGKILL) mid-search and started again on the same port and data dir. The workers must
# ride it out (back off, keep their running trials, re-attach or re-register) and the search must
# finish with a best trial. Usage: test_restart.sh HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
set -euo pipefail
HONE=$1 CTL=$2 WRK=$3 TRN=$4
tmp=$(mktemp -d /tmp/hone-restart.XXXXXX)
pids=() ctl_pid=
cleanup() {
  local rc=$?
  [ -n "$ctl_pid" ] && kill -TERM "$ctl_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $ctl_pid; do wait "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$tmp"/*.log; do echo "--- $f (tail)"; tail -n 30 "$f"; done
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

find_fmnist

cat > "$tmp/controller.yaml" <<YAML
log_format: text
heartbeat_seconds: 1
lease_seconds: 20
data_roots: ["$tmp", "$fm"]
YAML
start_ctl "$tmp" 127.0.0.1:0
port=$(cat "$tmp/port")
for i in 1 2; do start_worker "$tmp" "r-$i"; done

ds=$("$HONE" dataset create --name fmnist --path "$fm" --json | jget 'd["id"]')
exp=$("$HONE" experiment create --name restart --network mlp --train-dataset "$ds" \
      --spec data.train_limit=3000 --spec data.val_size=1000 --spec model.hidden=64 \
      --spec train.epochs=6 --json | jget 'd["id"]')
job=$("$HONE" automl start --experiment "$exp" --algorithm bayesian --max-recommendations 4 \
      --max-parallel 2 --json | jget 'd["id"]')

# Wait until trials are training, then kill the controller without warning.
for _ in $(seq 1 300); do
  ep=$("$HONE" job list --parent "$job" --json | jget 'max([j["epoch"] or 0 for j in d["jobs"]] + [0])')
  [ "$ep" -ge 1 ] && break; sleep 0.1
done
[ "$ep" -ge 1 ] || fail "no trial reported an epoch"
kill -KILL "$ctl_pid"; wait "$ctl_pid" 2>/dev/null || true; ctl_pid=
sleep 3 # the workers see connection refused and back off; trainers keep running
start_ctl "$tmp" "127.0.0.1:$port"

"$HONE" job wait "$job" --timeout 300 || fail "search did not finish after the restart"
st=$("$HONE" job status "$job" --json)
[ "$(jget 'd["status"]' <<<"$st")" = done ] || fail "search not done: $st"
[ "$(jget 'd["automl"]["best_job_id"] is not None' <<<"$st")" = True ] || fail "no best trial"
n=$("$HONE" job list --parent "$job" --json | jget 'len(d["jobs"])')
[ "$n" = 4 ] || fail "expected 4 trials, got $n"
grep -q "unreachable" "$tmp/worker-r-1.log" "$tmp/worker-r-2.log" || fail "workers never noticed the outage"
alive=$("$HONE" worker list --json | jget 'len([w for w in d["workers"] if w["alive"]])')
[ "$alive" -ge 2 ] || fail "workers did not come back ($alive alive)"
echo "restart: ok ($n trials, best $(jget 'd["automl"]["best_metric"]' <<<"$st"))"
