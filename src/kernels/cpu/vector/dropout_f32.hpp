#pragma once
// dropout's forward pass over float arrays, vectorized: one Philox4x32-10 draw per element
// (kernels/functors/philox.hpp, the CUDA kernel's draws too), ten rounds of two 32x32->64-bit products,
// ran one element at a time in the kernel's plain loop and made dropout a seventh of a BERT-base
// training step. Built for AVX-512, AVX2 and the baseline, picked at load by the CPU.
#include <cstdint>

namespace weir::internal {

/// For i in [begin, end): mask[i] = DropoutKeeps(seed, call, i, threshold), y[i] = mask[i] ? x[i]·scale : 0.
void DropoutF32(const float* x, float* y, std::uint8_t* mask, std::int64_t begin, std::int64_t end, std::uint64_t seed,
                std::uint64_t call, std::uint64_t threshold, float scale);

}  // namespace weir::internal
