#!/usr/bin/env bash
# detectnet_v2 on a COCO set (issue 30's figure): gen_detect.py's generated detection set (Fashion-MNIST
# items on photographs) written as COCO (`--coco splits`: train/ and val/, each annotations.json +
# images/), trained by hone-train with the default spec at EPOCHS epochs and SIZE px, then evaluated
# (`--evaluate`): prints the run's done line and the evaluation's COCO figures (AP@[.5:.95], AP50, AP75,
# AP by size: pycocotools' definitions, checked against it by tests/train/test_train_coco_ref.py).
# The set is generated once into the cache folder and kept.
# Usage: bench/detect_coco.sh BUILD-DIR [--device cpu|cuda] [--epochs N] [--count N] [--size N]
#          [--set KEY=VALUE]...      (defaults: cpu, 80 epochs, 5000 training images, 160 px)
# Environment: HONE_DETECT_PYTHON (a python with Pillow, default python3), HONE_BENCH_CACHE (default
# BUILD-DIR/detect-sets), HONE_PHOTOS_DIR and HONE_FASHION_MNIST as gen_detect.py reads them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: bench/detect_coco.sh BUILD-DIR [--device D] [--epochs N] [--count N] [--size N]}
shift
dev=cpu epochs=80 count=5000 size=160 sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --device) dev=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    *) echo "bench/detect_coco.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
py=${HONE_DETECT_PYTHON:-python3}
cache=${HONE_BENCH_CACHE:-$build/detect-sets}
set_dir=$cache/coco-splits-$count-$size
if [ ! -f "$set_dir/train/annotations.json" ]; then
  rm -rf "$set_dir.tmp"
  "$py" tests/data/gen_detect.py --count "$count" --size "$size" --coco splits "$set_dir.tmp" >/dev/null
  mv "$set_dir.tmp" "$set_dir"
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/hone-detect-coco.XXXXXX")
trap 'rm -rf "$out"' EXIT
t0=$(date +%s.%N)
"$build/train/hone-train" --set network=detectnet_v2 --set data.format=coco --set "data.path=$set_dir" \
  --set "train.epochs=$epochs" --set "model.input_size=$size" "${sets[@]}" --device "$dev" \
  --out "$out/run" >"$out/run.log"
t1=$(date +%s.%N)
echo "set: $set_dir ($(ls "$set_dir/train/images" | wc -l) train, $(ls "$set_dir/val/images" | wc -l) val images), $epochs epochs at $size px on $dev: $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
grep '"event":"done"' "$out/run.log"
"$build/train/hone-train" --evaluate "$out/run" --device "$dev" | tail -1 |
  "$py" -c 'import json,sys; r=json.loads(sys.stdin.read()); print(json.dumps({k: r[k] for k in r if k.startswith("coco_") or k in ("map", "images")}))'
