#include "kernels/cpu/vector/dropout_f32.hpp"

#include "kernels/functors/philox.hpp"

namespace weir::internal {

__attribute__((target_clones("avx512f", "avx2", "default"))) void DropoutF32(
    const float* __restrict x, float* __restrict y, std::uint8_t* __restrict mask, std::int64_t begin, std::int64_t end,
    std::uint64_t seed, std::uint64_t call, std::uint64_t threshold, float scale) {
  for (std::int64_t i = begin; i < end; ++i) {
    const bool keep = DropoutKeeps(seed, call, static_cast<std::uint64_t>(i), threshold);
    const float scaled = x[i] * scale;
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? scaled : 0.f;
  }
}

}  // namespace weir::internal
