#!/usr/bin/env bash
# End-to-end: starts a real hone-controller and TWO real hone-workers on loopback with a temp data
# dir, then through the hone CLI registers a Fashion-MNIST subset, runs a small AutoML search with
# Hyperband and then Bayesian, and checks early stopping, the best trial and its artifacts; then
# bad input through the CLI (exit 1 naming the field, exit 2 for usage) changes nothing stored.
# Usage: test_e2e.sh HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
set -euo pipefail
HONE=$1 CTL=$2 WRK=$3 TRN=$4
tmp=$(mktemp -d /tmp/hone-e2e.XXXXXX)
pids=() ctl_pid=
cleanup() {
  local rc=$?
  for p in "${pids[@]}" $ctl_pid; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $ctl_pid; do wait "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$tmp"/*.log; do echo "--- $f (tail)"; tail -n 40 "$f"; done
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

find_fmnist

# --- the stack: one controller, two workers (one thread each: CI has 2 cores)
cat > "$tmp/controller.yaml" <<YAML
log_format: text
heartbeat_seconds: 1
data_roots: ["$tmp", "$fm"]
YAML
start_ctl "$tmp" 127.0.0.1:0
for i in 1 2; do start_worker "$tmp" "e2e-$i"; done
for _ in $(seq 1 100); do
  n=$("$HONE" worker list --json | jget 'len([w for w in d["workers"] if w["alive"]])')
  [ "$n" = 2 ] && break; sleep 0.1
done
[ "$n" = 2 ] || fail "expected 2 live workers, got $n"
"$HONE" worker list

# --- dataset and experiment through the CLI (a 3000-image subset, tiny MLP)
ds=$("$HONE" dataset create --name fmnist --path "$fm" --json | jget 'd["id"]')
"$HONE" dataset get "$ds" | grep -q "train_images: 60000" || fail "dataset stats"
exp=$("$HONE" experiment create --name e2e --network mlp --train-dataset "$ds" \
      --spec data.train_limit=3000 --spec data.val_size=1000 --spec model.hidden=64 \
      --spec train.epochs=4 --json | jget 'd["id"]')
"$HONE" experiment automl-defaults "$exp" | grep -q "train.lr" || fail "automl-defaults"

# --- one train job (TAO's model train), its files, and an experiment changed by update
tj=$("$HONE" train start --experiment "$exp" --spec train.epochs=1 --wait --json | jget 'd["id"]')
[ "$("$HONE" job status "$tj" --json | jget 'd["status"]')" = done ] || fail "train start: not done"
"$HONE" job artifacts "$tj" --json | jget '[f["name"] for f in d["files"]]' | grep -q "model.bin" ||
  fail "job artifacts: no model.bin"
[ "$("$HONE" experiment update "$exp" --description "renamed by the CLI" --json |
     jget 'd["description"]')" = "renamed by the CLI" ] || fail "experiment update"
[ "$("$HONE" experiment get "$exp" --json | jget 'd["specs"]["model.hidden"]')" = 64 ] ||
  fail "experiment update changed the specs it was not given"

# Runs one search and checks it: done, best trial = best recorded metric, artifacts exist.
check_search() {
  local job=$1 algo=$2
  local dir="$tmp/dl-$algo"
  local status; status=$("$HONE" job status "$job" --json)
  [ "$(jget 'd["status"]' <<<"$status")" = done ] || fail "$algo: job not done: $status"
  local best; best=$(jget 'd["automl"]["best_metric"]' <<<"$status")
  local best_job; best_job=$(jget 'd["automl"]["best_job_id"]' <<<"$status")
  local recorded; recorded=$("$HONE" job metrics "$job" --json |
      jget 'max(m["val_accuracy"] for ms in d["trials"].values() for m in ms)')
  python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(abs(a-b)>1e-9)" \
      "$best" "$recorded" || fail "$algo: best_metric $best != best recorded $recorded"
  local own; own=$("$HONE" job metrics "$best_job" --json | jget 'max(m["val_accuracy"] for m in d["metrics"])')
  python3 -c "import sys; sys.exit(abs(float(sys.argv[1])-float(sys.argv[2]))>1e-9)" "$best" "$own" \
      || fail "$algo: best trial's own metrics disagree ($own vs $best)"
  "$HONE" job download "$job" --out "$dir" >/dev/null || fail "$algo: download"
  [ -s "$dir/best_model/model.bin" ] || fail "$algo: best_model/model.bin missing"
  [ -s "$dir/best_model/spec.yaml" ] || fail "$algo: best_model/spec.yaml missing"
  # issue 28: the human status is a summary, its best on a "best  METRIC VALUE (trial N, job ID)" line
  "$HONE" job status "$job" | grep -q "^best  *val_accuracy [0-9.]* (trial [0-9]*, job $best_job)" || fail "$algo: human status"
  echo "$algo: best val_accuracy $best (job $best_job), artifacts ok"
}

# --- Hyperband: brackets of successive halving, so some trials must stop early
hb=$("$HONE" automl start --experiment "$exp" --algorithm hyperband --R 4 --nu 2 \
     --max-parallel 2 --seed 3 --json | jget 'd["id"]')
"$HONE" job wait "$hb" --timeout 400 || fail "hyperband wait"
check_search "$hb" hyperband
early=$("$HONE" job status "$hb" --json | jget 'd["automl"]["trials_stopped_early"]')
[ "$early" -ge 1 ] || fail "hyperband: no trial stopped early"
listed=$("$HONE" job list --parent "$hb" --json | jget 'sum(1 for j in d["jobs"] if j["stopped_early"])')
[ "$listed" -ge 1 ] || fail "hyperband: no trial marked stopped_early in job list"
echo "hyperband: $early trial(s) stopped early"

# --- Bayesian: full-budget trials proposed by the GP
bo=$("$HONE" automl start --experiment "$exp" --algorithm bayesian --max-recommendations 4 \
     --max-parallel 2 --spec train.epochs=2 --param train.lr=float:0.001:0.1:log \
     --param train.optimizer=sgd,adamw --json | jget 'd["id"]')
# its trainers' stderr lines live (SSE), each trial's prefixed, until the job ends
timeout 400 "$HONE" job logs "$bo" --follow >"$tmp/follow.out" 2>"$tmp/follow.err" &
follow_pid=$!
"$HONE" job wait "$bo" --timeout 400 || fail "bayesian wait"
wait "$follow_pid" || fail "job logs --follow: exit $? ($(cat "$tmp/follow.err"))"
grep -Eq '^\[trial [0-9]+\] hone-train: mlp on ' "$tmp/follow.out" ||
  fail "job logs --follow: no trainer line: $(head -c 2000 "$tmp/follow.out")"
echo "logs --follow: $(wc -l <"$tmp/follow.out") trainer line(s)"
check_search "$bo" bayesian
n=$("$HONE" job list --parent "$bo" --json | jget 'len(d["jobs"])')
# the CLI follows the server's pages: one row a page lists the same trials, in the same order
paged=$("$HONE" job list --parent "$bo" --limit 1 --json | jget '",".join(j["id"] for j in d["jobs"])')
whole=$("$HONE" job list --parent "$bo" --json | jget '",".join(j["id"] for j in d["jobs"])')
[ "$paged" = "$whole" ] && [ -n "$whole" ] || fail "job list --limit 1: [$paged], want [$whole]"
[ "$n" = 4 ] || fail "bayesian: expected 4 trials, got $n"
trial_log=$("$HONE" job logs "$("$HONE" job list --parent "$bo" --json | jget 'd["jobs"][0]["id"]')")
grep -q "hone-train: mlp on " <<<"$trial_log" || fail "job logs: no trainer line stored: $trial_log"

# --- the same files uploaded as a plain tar archive make an identical dataset
tar --format=ustar -C "$fm" -cf "$tmp/fm.tar" train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
    t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz
up=$(HONE_PROGRESS=1 "$HONE" dataset upload "$tmp/fm.tar" --name fm-uploaded --json 2>"$tmp/bar" |
     jget 'd["stats"]["train_images"]')
# the progress bar (forced: stderr is not a terminal here) ends at 100% of the archive's size
tail -c 300 "$tmp/bar" | tr '\r' '\n' | tail -2 | grep -q "^upload 100% \[#\{30\}\]" ||
  fail "upload progress bar: $(tail -c 200 "$tmp/bar" | tr '\r' '\n' | tail -2)"
[ "$up" = 60000 ] || fail "uploaded dataset: expected 60000 train images, got $up"

# --- bad input through the CLI: exit 1 with the field named, nothing stored changes
before=$("$HONE" dataset list --json | jget 'len(d["datasets"])'),$("$HONE" experiment list --json | jget 'len(d["experiments"])')
expect_err() { # expect_err CODE PATTERN -- command...
  local code=$1 pat=$2; shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" = "$code" ] || fail "expected exit $code from '$*', got $rc: $out"
  grep -q -- "$pat" <<<"$out" || fail "expected '$pat' from '$*': $out"
}
expect_err 1 "field: path" -- "$HONE" dataset create --name bad --path /etc
expect_err 2 "nothing to change" -- "$HONE" experiment update "$exp"
# the controller's own routes as commands
[ "$("$HONE" server health --json | jget 'd["healthz"] + d["readyz"]')" = okok ] || fail "server health"
# (whole outputs first: grep -q stops reading early, and pipefail would blame the writer)
out=$("$HONE" server openapi) && grep -q "^openapi: 3" <<<"$out" || fail "server openapi"
"$HONE" server spec-schema | jget 'd["properties"]["train.lr"]' >/dev/null || fail "server spec-schema"
out=$("$HONE" server metrics) && grep -q "^hone_" <<<"$out" || fail "server metrics"
expect_err 1 "field: path" -- "$HONE" dataset create --name bad --path "$tmp/../../etc"
expect_err 1 "field: specs.train.bogus" -- "$HONE" experiment create --name bad --network mlp \
    --train-dataset "$ds" --spec train.bogus=1
expect_err 1 "field: specs.train.lr" -- "$HONE" experiment create --name bad --network mlp \
    --train-dataset "$ds" --spec train.lr=fast
expect_err 1 "field: train_datasets" -- "$HONE" experiment create --name bad --network mlp \
    --train-dataset ds-doesnotexist
expect_err 1 "field: network_arch" -- "$HONE" experiment create --name bad --network resnet9000 \
    --train-dataset "$ds"
expect_err 1 "error:" -- "$HONE" job status job-doesnotexist
expect_err 1 "automl_settings" -- "$HONE" automl start --experiment "$exp" --algorithm bogus
expect_err 2 "missing --path" -- "$HONE" dataset create --name bad
# A tar archive holding a symbolic link is refused whole (controller/tar.c checks every entry).
mkdir -p "$tmp/evil" && echo x >"$tmp/evil/a" && ln -s /etc/passwd "$tmp/evil/link"
tar --format=ustar -C "$tmp/evil" -cf "$tmp/evil.tar" a link
expect_err 1 "field: archive" -- "$HONE" dataset upload "$tmp/evil.tar" --name evil
expect_err 2 "unknown option --frobnicate" -- "$HONE" dataset list --frobnicate
expect_err 2 "float:LO:HI" -- "$HONE" automl start --experiment "$exp" --param train.lr=float:1
expect_err 2 "unknown command" -- "$HONE" dataset explode
# Raw HTTP for what the CLI never sends: malformed JSON, unknown fields, a non-JSON type, a body
# too large.
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code -X POST -H 'Content-Type: application/json' -d '{"name":' "$HONE_URL/api/v1/datasets")" = 400 ] || fail "malformed JSON not 400"
[ "$(code -X POST -H 'Content-Type: application/json' -d '{"name":"x","path":"'"$fm"'","format":"idx","type":"image_classification","colour":"red"}' "$HONE_URL/api/v1/datasets")" = 422 ] || fail "unknown field not 422"
[ "$(code -X POST -H 'Content-Type: text/plain' -d 'hello' "$HONE_URL/api/v1/datasets")" = 415 ] || fail "text/plain not 415"
head -c 3000000 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
[ "$(code -X POST -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" "$HONE_URL/api/v1/datasets")" = 413 ] || fail "oversize body not 413"
after=$("$HONE" dataset list --json | jget 'len(d["datasets"])'),$("$HONE" experiment list --json | jget 'len(d["experiments"])')
[ "$before" = "$after" ] || fail "bad input changed what is stored ($before -> $after)"

# --- the workers shut down cleanly on SIGTERM
for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p" || fail "worker exited non-zero on SIGTERM"; done
pids=()
echo "e2e: ok"
