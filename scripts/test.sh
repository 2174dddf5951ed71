#!/usr/bin/env bash
# Builds Hone under AddressSanitizer + UndefinedBehaviorSanitizer and runs every test (ctest).
# Warnings are errors here (HONE_WERROR=ON); a plain user build only warns.
# Usage: scripts/test.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
build=${HONE_TEST_BUILD:-build-test}
cmake -S . -B "$build" -DHONE_SANITIZE=ON -DHONE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@"
