#!/usr/bin/env bash
# tests/cli/test_cli_completion.sh: `hone completion bash` completes every command `hone help`
# lists (noun, then verb), each command's own options, and skips option values while finding them;
# option values and help topics complete too (the controller's ids: test_cli_habits.py).
# Usage: test_cli_completion.sh HONE
set -u
HONE=$1
fail=0
source <("$HONE" completion bash) || { echo "FAIL: the script does not load"; exit 1; }
complete_words() { # complete_words WORD... : COMPREPLY for the last word
  COMP_WORDS=(hone "$@"); COMP_CWORD=$#; COMPREPLY=(); _hone; echo " ${COMPREPLY[*]} "
}
expect() { # expect WANT WORD...
  local want=$1; shift
  local got; got=$(complete_words "$@")
  case $got in *" $want "*) ;; *) echo "FAIL: hone $* -> [$got], want $want"; fail=1 ;; esac
}
expect_not() {
  local bad=$1; shift
  local got; got=$(complete_words "$@")
  case $got in *" $bad "*) echo "FAIL: hone $* -> [$got], must not offer $bad"; fail=1 ;; esac
}
# every command of `hone help`, noun then verb
n=0
while IFS= read -r line; do
  read -r noun verb _ <<<"${line:7:28}" # the command column of `hone help`
  [ "$noun" = completion ] && continue
  expect "$noun" "${noun:0:2}"
  case $verb in
    --*|"") ;;
    *) expect "$verb" "$noun" "${verb:0:3}"; n=$((n + 1)) ;;
  esac
done < <("$HONE" help | grep '^  hone ')
[ $n -ge 20 ] || { echo "FAIL: only $n noun-verb commands found in hone help"; fail=1; }
# options of the command being typed, and only of it
expect --size dataset convert ds-1 --s
expect_not --size dataset create --s
expect --budget-minutes demo --bu
expect --spec experiment create --name x --sp
# values of options are not taken for the noun or the verb
expect evaluate --url http://x job ev
expect --parent job list --status running --pa
expect bash completion b
# option values from the code's own tables (issue 28): algorithms, networks, statuses, devices,
# spec keys (as KEY=), sweepable keys, help topics; the word after a value option is its value
expect hyperband automl start --algorithm hy
expect_not --name automl start --algorithm ""
expect detectnet_v2 experiment create --network de
expect running job list --status ru
expect cuda local --device c
expect train.lr= train start --spec train.l
expect train.lr automl start --param train.l
expect specs help sp
expect help he
[ $fail = 0 ] && echo "completion: ok ($n commands)"
exit $fail
