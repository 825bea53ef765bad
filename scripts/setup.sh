#!/usr/bin/env bash
# Installs every Debian package Weir needs that this machine lacks. Safe to re-run: it does
# nothing (and needs no network) when everything is present.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config cmake
  libcaf-dev libboost-dev libfmt-dev doctest-dev libdnnl-dev libopenblas-dev zlib1g-dev libgloo-dev libssl-dev libturbojpeg0-dev
  libpng-dev
  python3-numpy python3-pybind11 pybind11-dev python3-dev python3-pytest python3-mesonpy
  python3-venv python3-pip iproute2
  python3-torch
)
# PyTorch (above) is the peer the tests check our zoo's models against; `make bench` also times
# torchvision's data loading.
if [[ "${WEIR_BENCH_DEPS:-0}" == 1 ]]; then packages+=(python3-torchvision); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
