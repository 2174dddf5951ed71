#!/usr/bin/env bash
# Convert throughput: Fashion-MNIST written out as a PNG image folder (70,000 files, by
# tests/data/fmnist_folder.py with Debian's python3-pil), then packed by hone-pack (Release build)
# at 28x28 grey (decode + copy) and 32x32 RGB (decode + grey-to-RGB + bilinear resize), on 1
# thread and on every core. Prints images/s and images/s per core. Run by hand on an idle machine.
# Usage: bench/convert.sh [WORK_DIR]   (default /tmp/hone-bench-convert; the folder is kept there)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/hone-bench-convert}
build=${HONE_BENCH_BUILD:-build-bench-convert}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHONE_CUDA=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target hone-pack >/dev/null
mkdir -p "$work"
if [ ! -f "$work/png/.complete" ]; then
  echo "convert: writing the PNG folder to $work/png (once)"
  rm -rf "$work/png"
  /usr/bin/python3 tests/data/fmnist_folder.py "$work/png"
  touch "$work/png/.complete"
fi
cores=$(nproc)
echo "convert: $(find "$work/png" -name '*.png' | wc -l) PNG files, $(du -sh "$work/png" | cut -f1); $cores cores; $(uname -m)"
for size in "28x28 --grey" "32x32 --rgb"; do
  for t in 1 "$cores"; do
    sync
    # shellcheck disable=SC2086 # size holds two words on purpose
    line=$("$build/data/hone-pack" "$work/png" "$work/out.pack" --size $size --threads "$t" --quiet)
    ips=$(echo "$line" | sed -E 's/.*\(([0-9]+) images\/s.*/\1/')
    echo "convert: --size $size --threads $t: $ips images/s, $((ips / t)) images/s per core"
  done
done
t0=$(date +%s.%N)
"$build/data/hone-pack" --verify "$work/out.pack" >/dev/null
echo "convert: --verify (mmap + CRC-32 of $(du -h "$work/out.pack" | cut -f1)): $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}") s"
rm -f "$work/out.pack"
