#!/usr/bin/env bash
# Builds Hone (optimised) and runs the demo: a local AutoML search on Fashion-MNIST with a live
# progress line and the best trial at the end. Extra arguments go to `hone demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >&2  # build chatter on stderr: with --json, stdout is the result
exec build/cli/hone demo --data-dir "${HONE_DATA_DIR:-$PWD/hone-data}" "$@"
