#!/usr/bin/env bash
# The container image's ENTRYPOINT (Dockerfile): its first argument picks the program and the rest
# are passed on unchanged, so the Helm chart's args read `controller --config FILE` and
# `worker --storage http ...`. The binaries are looked up on PATH (the image puts them in
# /usr/local/bin; tests/helm points PATH at a build folder instead).
#   controller ARGS   hone-controller ARGS
#   worker ARGS       hone-worker ARGS
#   train ARGS        hone-train ARGS
#   pack ARGS         hone-pack ARGS
#   hone ARGS         the CLI
#   --help | help     this list
# Anything else is run as a command (e.g. `bash` to look around in the image).
set -euo pipefail

usage() {
  echo "usage: container-entrypoint.sh controller|worker|train|pack|hone [ARGS...]"
  echo "       (anything else is run as a command)"
}

if [ $# -eq 0 ]; then
  usage >&2
  exit 2
fi
mode=$1
shift
case "$mode" in
  controller) exec hone-controller "$@" ;;
  worker) exec hone-worker "$@" ;;
  train) exec hone-train "$@" ;;
  pack) exec hone-pack "$@" ;;
  hone | cli) exec hone "$@" ;;
  -h | --help | help) usage ;;
  *) exec "$mode" "$@" ;;
esac
