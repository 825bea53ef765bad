#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs to run on a GPU machine that lacks Weir's build dependencies
# (a lent machine with CUDA and PyTorch but no CAF, oneDNN or Gloo, whose Python the bindings were not
# built for): the CUDA test binaries, the C++ train-step benchmark, libweir.so and libweir_cuda.so from a build here,
# and every shared library they load that is not the C library, the C++ runtime or CUDA's (which the GPU
# machine has: cuBLAS, cuDNN and NCCL are found there). Writes .gpu-bundle/ (git-ignored); then, there:
#   scripts/gpu-check.sh --prebuilt .gpu-bundle/build
#   scripts/gpu-bundle.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle=.gpu-bundle
binaries=(tests/test_cuda tests/test_ops tests/test_common tests/test_actors bench/train_step)
scripts/reconfigure-on-new-sources.sh "$build"
ninja -C "$build" "${binaries[@]}" src/libweir.so src/libweir_cuda.so >/dev/null
rm -rf "$bundle"
mkdir -p "$bundle/build/tests" "$bundle/build/bench" "$bundle/build/src" "$bundle/lib"
for binary in "${binaries[@]}"; do cp "$build/$binary" "$bundle/build/$binary"; done
# Together in one folder: the core loads the CUDA backend from its own.
cp "$build/src/libweir.so" "$build/src/libweir_cuda.so" "$bundle/build/src/"
# Libraries the GPU machine is expected to have of its own (newer C and C++ runtimes; its own CUDA
# libraries, matching its driver) are left out; libcudart is ours, the version the code was built with.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libweir|libcublas|libcudnn|libnccl)'
for binary in "${binaries[@]}" src/libweir.so src/libweir_cuda.so; do ldd "$build/$binary"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $skip ]] || cp -L "$path" "$bundle/lib/$name"
  done
tar -C "$bundle" -cJf "$bundle/lib.tar.xz" lib && rm -rf "$bundle/lib"
du -sh "$bundle"
