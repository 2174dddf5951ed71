#!/usr/bin/env bash
# Installs the Debian packages Hone needs to build, test and run the demo, when any are missing.
# Safe to run again: it asks apt only for what dpkg does not already have.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      libuv1-dev libsqlite3-dev libjansson-dev libyaml-dev libcurl4-openssl-dev libssl-dev libhttp-parser-dev
      libopenblas-dev zlib1g-dev dataset-fashion-mnist python3 curl ca-certificates
      libjpeg62-turbo-dev libspng-dev python3-pil)
# data/ decodes JPEG with libjpeg-turbo and PNG with libspng; tests/data compares its pixels with
# Pillow's (python3-pil, which Debian builds on the same libjpeg-turbo).
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
