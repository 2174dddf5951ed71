#!/usr/bin/env bash
# Checks that every tracked C, header and CUDA file matches .clang-format (formatting is the
# tool's job). Prints the offenders and exits 1; fix with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh' | while read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
if [ -n "$bad" ]; then
  echo "not clang-formatted:"; echo "$bad"; exit 1
fi
echo "format: ok"
