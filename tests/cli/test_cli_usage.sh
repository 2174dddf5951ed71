#!/usr/bin/env bash
# test_cli_usage: the hone binary's usage errors exit 2 and name the fix, help exits 0, and a
# controller that is not there is exit 1 with a hint (no server needed).
# Issue 28's habits: help on stdout with exit 0 (`hone --help | less` shows it), --version on hone
# and on every other program given, "did you mean" for commands, verbs, options, option values and
# help topics, and usage errors under --json as one JSON object on stderr (exit 2 kept).
# Usage: test_cli_usage.sh path/to/hone [path/to/other-program ...]
set -uo pipefail
HONE=$1
shift
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
# help is output, on stdout, exit 0; a usage error stays on stderr with exit 2
out() { # out CODE PATTERN -- command...: stdout alone holds PATTERN, exit CODE
  local code=$1 pat=$2; shift 3
  local so rc=0
  so=$("$@" 2>/dev/null) || rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$so"; then
    echo "FAIL: '$*' gave exit $rc (want $code), stdout lacks '$pat':"; echo "$so"; fails=$((fails+1))
  fi
}
out 0 "hone job status" -- "$HONE" --help
out 0 "hone job status" -- "$HONE" -h
out 0 "hone job status" -- "$HONE" help
out 0 "usage: hone job status" -- "$HONE" help job status
out 0 "status" -- "$HONE" job --help
out 0 "usage: hone job metrics" -- "$HONE" job metrics --help
out 0 "train.lr " -- "$HONE" help specs
out 0 "hyperband" -- "$HONE" help algorithms
out 0 "image_folder" -- "$HONE" help formats
out 0 "detectnet_v2" -- "$HONE" help networks
out 0 "hone local" -- "$HONE" help local
out 0 "hone job status" -- "$HONE"
# the spec topic is the spec key table: every key hone-spec-schema knows a user may set
out 0 "model.hidden " -- "$HONE" help specs
check 2 "no command or help topic 'specz'; did you mean specs" -- "$HONE" help specz
# --version: hone's, before or after a command, and every program's, one version for all
ver=$("$HONE" --version) || { echo "FAIL: hone --version exit $?"; fails=$((fails+1)); }
grep -Eq '^hone [0-9]+\.[0-9]+\.[0-9]+$' <<<"$ver" || { echo "FAIL: hone --version: '$ver'"; fails=$((fails+1)); }
out 0 "^$ver\$" -- "$HONE" job list --version
for prog in "$@"; do
  name=$(basename "$prog")
  out 0 "^$name ${ver#hone }\$" -- "$prog" --version
done
# did you mean: commands, verbs, options, option values (before anything is sent)
check 2 "did you mean 'job'" -- "$HONE" jbo list
check 2 "did you mean 'status'" -- "$HONE" job stauts x
check 2 "did you mean --json" -- "$HONE" job list --jsno
check 2 "did you mean --experiment" -- "$HONE" automl start --experment e
check 2 "did you mean running" -- "$HONE" job list --status runing
check 2 "did you mean cuda" -- "$HONE" local --device cdua
# --json: a usage error is one JSON object on stderr naming the option, exit 2 kept
json_err() { # json_err CODE FIELD PATTERN -- command...
  local code=$1 field=$2 pat=$3; shift 4
  local se rc=0
  se=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" != "$code" ] || ! python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["field"] == (sys.argv[2] or None), o
assert sys.argv[3] in o["error"], o
assert o["exit"] == int(sys.argv[4]), o' "$se" "$field" "$pat" "$code"; then
    echo "FAIL: '$*' exit $rc (want $code), stderr not the JSON error: $se"; fails=$((fails+1))
  fi
}
json_err 2 jsno "unknown option --jsno" -- "$HONE" --json job list --jsno
json_err 2 status "did you mean running" -- "$HONE" job list --json --status runing
json_err 2 command "unknown command 'frob'" -- "$HONE" --json frob
json_err 2 "" "no command given" -- "$HONE" --json
json_err 1 "" "cannot reach the controller" -- "$HONE" --json --url http://127.0.0.1:9 dataset list
# hone(1), from the same tables: every command of `hone help`, the topics, and valid roff
man=$("$HONE" __man) || { echo "FAIL: hone __man exit $?"; fails=$((fails+1)); }
plain=$(sed 's/\\-/-/g' <<<"$man")
while IFS= read -r line; do
  read -r noun verb _ <<<"${line:7:28}" # the command column of `hone help`
  [ "$noun" = completion ] && continue
  case $verb in --*|\[*) verb= ;; esac
  grep -q "^\.B hone $noun${verb:+ $verb}\( \|\$\)" <<<"$plain" || { echo "FAIL: the man page lacks hone $noun $verb"; fails=$((fails+1)); }
done < <("$HONE" help | grep '^  hone ')
grep -q '^\.SH SPECS' <<<"$man" && grep -q 'train.lr ' <<<"$plain" || { echo "FAIL: the man page lacks the spec keys"; fails=$((fails+1)); }
if command -v groff >/dev/null; then
  warn=$(groff -man -Tutf8 -ww <<<"$man" 2>&1 >/dev/null)
  [ -z "$warn" ] || { echo "FAIL: groff warns: $warn"; fails=$((fails+1)); }
fi
[ $fails -eq 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }
