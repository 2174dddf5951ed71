# Shared helpers for the integration scripts (sourced, not run): failing with a message, reading a
# value out of JSON on stdin, and finding the Fashion-MNIST folder (or skipping with exit 77).
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {"d": d}))' "$1"; }

# Sets fm to the Fashion-MNIST folder: $HONE_FMNIST_DIR, the Debian package, or the repo's .data.
find_fmnist() {
  local src
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  fm=${HONE_FMNIST_DIR:-}
  [ -z "$fm" ] && fm=$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep train-images-idx3 | head -1 | xargs -r dirname || true)
  [ -z "$fm" ] && [ -f "$src/.data/train-images-idx3-ubyte.gz" ] && fm=$src/.data
  [ -n "$fm" ] && [ -d "$fm" ] || { echo "SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)"; exit 77; }
}
