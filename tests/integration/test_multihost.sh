#!/usr/bin/env bash
# Multi-host (issue 10): the controller and three workers, each in its own network namespace (veth
# pairs to a bridge in the root namespace), each with its own empty dir, the workers started as the
# Helm chart starts them (--storage http, --controller http://<ip>:port, the enrolment token in
# HONE_TOKEN) and as user nobody, so the controller's data dir (mode 0700) is out of their reach:
# datasets and checkpoints move over HTTP only. An AutoML search runs to the end; mid-trial, one
# worker's namespace is cut off (its link down); its lease lapses (lease_seconds: 3) and the trial
# finishes on another worker from its uploaded checkpoint: the lease history names two workers
# for that trial and the second one resumed past epoch 1.
# Skips (77) when not root or `ip netns add` fails, unless HONE_REQUIRE_NETNS=1.
# Usage: test_multihost.sh HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
set -euo pipefail
HONE=$1 CTL=$2 WRK=$3 TRN=$4
skip() {
  if [ "${HONE_REQUIRE_NETNS:-0}" = 1 ]; then echo "FAIL: $*" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (network namespaces need it)"
command -v ip >/dev/null || skip "no ip(8)"
command -v setpriv >/dev/null || skip "no setpriv(1)"

p=hm$((RANDOM % 9000 + 1000)) # names of this run (interface names stay under 15 characters)
net=10.$((RANDOM % 200 + 20)).$((RANDOM % 250)) # a /24 of this run
tmp=$(mktemp -d /tmp/hone-multihost.XXXXXX)
chmod 755 "$tmp"
nss=()
cleanup() {
  local rc=$?
  for ns in "${nss[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  sleep 0.5
  for ns in "${nss[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
    ip link del "$p${ns#"$p-"}" 2>/dev/null || true # the root side of its veth pair
  done
  ip link del "${p}br" 2>/dev/null || true
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$tmp"/*.log; do echo "--- $f (tail)"; tail -n 30 "$f"; done
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

# --- the network: a bridge in the root namespace (it has .254, for this script), one namespace
# per host, each with a veth pair to the bridge
ip link add "${p}br" type bridge || skip "cannot make a bridge"
ip addr add "$net.254/24" dev "${p}br"
ip link set "${p}br" up
host() { # host NAME IP
  ip netns add "$p-$1" || skip "ip netns add failed"
  nss+=("$p-$1")
  ip link add "$p$1" type veth peer name "$p$1x"
  ip link set "$p$1x" netns "$p-$1"
  ip -n "$p-$1" link set "$p$1x" name eth0
  ip -n "$p-$1" addr add "$2/24" dev eth0
  ip -n "$p-$1" link set eth0 up
  ip -n "$p-$1" link set lo up
  ip link set "$p$1" master "${p}br"
  ip link set "$p$1" up
}
host c "$net.1"
for i in 1 2 3; do host "w$i" "$net.1$i"; done

# --- a small IDX dataset inside the controller's data dir, which only root may read
mkdir -p "$tmp/ctl/data/datasets"
python3 "$(dirname "$0")/../lib/blob_idx.py" "$tmp/ctl/data/datasets/tiny" 1200 200
chmod 700 "$tmp/ctl/data"
if setpriv --reuid=65534 --regid=65534 --clear-groups cat "$tmp/ctl/data/datasets/tiny/t10k-labels-idx1-ubyte.gz" >/dev/null 2>&1; then
  fail "user nobody can read the controller's data dir"
fi

# --- the controller in its namespace, on its address
cat > "$tmp/ctl/controller.yaml" <<YAML
log_format: text
heartbeat_seconds: 1
lease_seconds: 3
auth: {token: adm1n, worker_token: enrol-me}
data_roots: ["$tmp/ctl/data"]
YAML
ip netns exec "$p-c" "$CTL" --config "$tmp/ctl/controller.yaml" --listen 0.0.0.0:8080 \
  --data-dir "$tmp/ctl/data" >"$tmp/controller.log" 2>&1 &
export HONE_URL="http://$net.1:8080" HONE_TOKEN=adm1n
for _ in $(seq 1 200); do curl -sf "$HONE_URL/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "$HONE_URL/readyz" >/dev/null || fail "controller not ready at $HONE_URL"

# --- three workers, as the chart starts them: own namespace, own empty dir, user nobody. They run
# copies of the programs in $tmp: the build tree may sit where nobody cannot reach (a checkout
# under a mode-0700 folder, as `mktemp -d` makes), as the chart's image never does.
mkdir "$tmp/bin"
cp "$WRK" "$TRN" "$tmp/bin/"
WRK=$tmp/bin/$(basename "$WRK") TRN=$tmp/bin/$(basename "$TRN")
for i in 1 2 3; do
  mkdir "$tmp/w$i"
  chown 65534:65534 "$tmp/w$i"
  ip netns exec "$p-w$i" setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HONE_TOKEN=enrol-me HONE_STORAGE=http \
    "$WRK" --controller "$HONE_URL" --name "w$i" --work-dir "$tmp/w$i" --device cpu \
    --threads 1 --trainer "$TRN" --lease-wait 2 -v >"$tmp/worker-w$i.log" 2>&1 &
done
for _ in $(seq 1 100); do
  n=$("$HONE" worker list --json | jget 'len([w for w in d["workers"] if w["alive"]])')
  [ "$n" = 3 ] && break; sleep 0.1
done
[ "$n" = 3 ] || fail "expected 3 live workers, got $n"

ds=$("$HONE" dataset create --name tiny --path "$tmp/ctl/data/datasets/tiny" --json | jget 'd["id"]')
exp=$("$HONE" experiment create --name mh --network mlp --train-dataset "$ds" \
      --spec data.val_size=200 --spec model.hidden=256 --spec train.epochs=40 --json | jget 'd["id"]')
# --early-stop none: the cut-off trial must live to fail over, not be stopped by its curve
aj=$("$HONE" automl start --experiment "$exp" --algorithm bayesian --max-recommendations 3 \
     --max-parallel 3 --param train.lr=float:0.01:0.1:log --early-stop none --json | jget 'd["id"]')

# --- mid-trial: cut off the worker of a running trial that has checkpointed an epoch or two
victim= trial=
for _ in $(seq 1 600); do
  row=$("$HONE" job list --parent "$aj" --json |
        jget '([j["id"] + " " + j["worker_id"] for j in d["jobs"] if j["status"] == "running" and (j["epoch"] or 0) >= 2] + [""])[0]')
  if [ -n "$row" ]; then
    read -r trial victim <<<"$row"
    break
  fi
  sleep 0.05
done
[ -n "$trial" ] || fail "no trial reached epoch 2 while running"
# wait until its checkpoint is on the controller (the uploader runs beside the trainer)
for _ in $(seq 1 200); do
  "$HONE" job artifacts "$trial" --json | jget '[f["name"] for f in d["files"]]' | grep -q checkpoint.bin && break
  sleep 0.05
done
vname=$("$HONE" worker list --json | jget "[w['name'] for w in d['workers'] if w['id'] == '$victim'][0]")
ip link set "$p$vname" down
echo "cut off $vname (worker $victim) running $trial"

"$HONE" job wait "$aj" --timeout 500 || fail "automl job did not finish"
st=$("$HONE" job status "$aj" --json | jget 'd["status"]')
[ "$st" = done ] || fail "automl job $st"
[ "$("$HONE" job status "$trial" --json | jget 'd["status"]')" = done ] || fail "trial $trial not done"

# the lease history: two workers for the trial, the second not the victim
holders=$(python3 - "$tmp/ctl/data/hone.db" "$trial" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(" ".join(r[0] for r in db.execute("SELECT worker_id FROM leases WHERE job_id=? ORDER BY id",
                                        (sys.argv[2],))))
PY
)
echo "lease history of $trial: $holders"
set -- $holders
[ $# -ge 2 ] || fail "lease history of $trial names one worker: $holders"
[ "$1" = "$victim" ] && [ "${!#}" != "$victim" ] || fail "lease history: $holders (victim $victim)"
second=$("$HONE" worker list --json | jget "[w['name'] for w in d['workers'] if w['id'] == '${!#}'][0]")
grep -q "job $trial: checkpoint.bin fetched from the controller" "$tmp/worker-$second.log" ||
  fail "$second did not fetch the checkpoint of $trial"
grep -q "job $trial: starting .*resumed" "$tmp/worker-$second.log" || fail "$second did not resume $trial"
first=$(grep -o "job $trial: epoch [0-9]* reported" "$tmp/worker-$second.log" | head -1 | grep -o "epoch [0-9]*" | cut -d' ' -f2)
[ -n "$first" ] && [ "$first" -gt 1 ] || fail "$second's first epoch of $trial was ${first:-none}"
echo "multihost: ok ($trial: $vname cut off, $second resumed it at epoch $first)"
