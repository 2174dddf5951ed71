#!/usr/bin/env bash
# test_cli_usage: the hone binary's usage errors exit 2 and name the fix, help exits 0, and a
# controller that is not there is exit 1 with a hint (no server needed).
# Usage: test_cli_usage.sh path/to/hone
set -uo pipefail
HONE=$1
fails=0
check() { # check CODE PATTERN -- command...
  local code=$1 pat=$2; shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' gave exit $rc (want $code), output lacks '$pat':"; echo "$out"; fails=$((fails+1))
  fi
}
check 0 "hone dataset create" -- "$HONE" help
check 0 "usage: hone dataset create" -- "$HONE" dataset create --help
check 0 "--budget-minutes" -- "$HONE" demo --help
check 2 "unknown command 'frob'" -- "$HONE" frob
check 2 "create upload list get delete" -- "$HONE" dataset
check 2 "unknown command 'hone job explode'" -- "$HONE" job explode
check 2 "missing --path (add --path DIR)" -- "$HONE" dataset create --name x
check 2 "missing argument" -- "$HONE" job status
check 2 "unknown option --colour" -- "$HONE" job list --colour red
check 2 "--R must be an integer" -- "$HONE" automl start --experiment e --R many
check 2 "--budget-minutes must be a number" -- "$HONE" demo --budget-minutes soon
check 2 "--algorithm must be" -- "$HONE" demo --algorithm grid
check 2 "--device must be cpu, cuda or auto" -- "$HONE" local --device tpu
check 2 "--url must be an http" -- "$HONE" --url ftp://x dataset list
# Port 9 (discard) on loopback: nothing listens, so the client must say so and exit 1.
check 1 "cannot reach the controller" -- "$HONE" --url http://127.0.0.1:9 dataset list
check 1 "hone local" -- "$HONE" dataset list --url http://127.0.0.1:9
[ $fails -eq 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }
