#!/usr/bin/env bash
# Builds tests/cpp_library/train_xor.cpp as a user would, with nothing but pkg-config's flags for this
# build tree's weir-uninstalled.pc, and runs it. Arguments: the build folder, the source, the C++
# compiler and the build's sanitizer flags (if any).
set -euo pipefail
build_dir=$1 source=$2 cxx=$3
shift 3
export PKG_CONFIG_PATH="$build_dir/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
libdir=$(pkg-config --variable=libdir weir)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2046 # pkg-config's flags are words
"$cxx" "$@" -o "$out/train_xor" "$source" $(pkg-config --cflags --libs weir) -Wl,-rpath,"$libdir"
"$out/train_xor"
