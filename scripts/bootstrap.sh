#!/usr/bin/env bash
# Installs the Debian packages Hone needs to build, test and run the demo, when any are missing.
# Safe to run again: it asks apt only for what dpkg does not already have.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      libuv1-dev libsqlite3-dev libjansson-dev libyaml-dev libcurl4-openssl-dev libssl-dev libhttp-parser-dev
      libopenblas-dev zlib1g-dev dataset-fashion-mnist python3 curl ca-certificates
      libjpeg62-turbo-dev libspng-dev python3-pil chromium chromium-driver python3-selenium
      python3-yaml python3-venv libprotobuf-c-dev protobuf-c-compiler)
# data/ decodes JPEG with libjpeg-turbo and PNG with libspng; tests/data compares its pixels with
# Pillow's (python3-pil, which Debian builds on the same libjpeg-turbo). tests/web drives the page
# at / in headless Chromium (chromium, chromium-driver, python3-selenium). tests/controller reads
# api/openapi.yaml with python3-yaml and installs schemathesis with pip into a venv (python3-venv).
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Real photographs for tests/data (decoding compared with Pillow's): the sample images that
# python3-skimage and python3-sklearn ship, taken from their .debs (downloaded, not installed: the
# packages would pull in SciPy and friends) into .cache/photos once. Best effort: without apt's
# lists or a network the test skips that part, unless HONE_REQUIRE_PHOTOS=1 (CI sets it).
photos="$(cd "$(dirname "$0")/.." && pwd)/.cache/photos"
if [ ! -d /usr/lib/python3/dist-packages/skimage/data ] && [ ! -e "$photos/done" ]; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq python3-skimage python3-sklearn 2>/dev/null); then
    mkdir -p "$photos/skimage" "$photos/sklearn"
    for d in "$tmp"/*.deb; do dpkg -x "$d" "$tmp/x"; done
    cp "$tmp"/x/usr/lib/python3/dist-packages/skimage/data/*.{png,jpg} "$photos/skimage/" 2>/dev/null || true
    cp "$tmp"/x/usr/lib/python3/dist-packages/sklearn/datasets/images/*.jpg "$photos/sklearn/" 2>/dev/null || true
    touch "$photos/done"
    echo "bootstrap: $(ls "$photos"/skimage "$photos"/sklearn | grep -c .) test photographs in $photos"
  else
    echo "bootstrap: could not download python3-skimage/python3-sklearn for the test photographs"
  fi
  rm -rf "$tmp"
fi
