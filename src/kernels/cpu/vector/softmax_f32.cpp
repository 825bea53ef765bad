#include "kernels/cpu/vector/softmax_f32.hpp"

#include <cstdint>

#include "kernels/cpu/vector/exp_f32.hpp"

namespace weir::internal {
namespace {

constexpr int kLanes = 16;  // a 512-bit register of floats; the loops below work lane by lane

// The row's maximum, a NaN ignored unless it comes first (as the scalar loop's `x > max ? x : max`).
__attribute__((always_inline)) inline float RowMax(const float* __restrict in, std::int64_t n) {
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = in[0];
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = in[j + l] > lanes[l] ? in[j + l] : lanes[l];
  }
  float max = lanes[0];
  for (int l = 1; l < kLanes; ++l) max = lanes[l] > max ? lanes[l] : max;
  for (; j < n; ++j) max = in[j] > max ? in[j] : max;
  return max;
}

}  // namespace

WEIR_VECTOR_CLONES void SoftmaxRowsF32(const float* __restrict x, float* __restrict y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const float max = RowMax(in, n);
    double lanes[kLanes] = {};
    std::int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float e = ExpNonPositive(in[j + l] - max);
        out[j + l] = e;
        lanes[l] += e;
      }
    }
    double sum = 0;
    for (; j < n; ++j) {
      const float e = ExpNonPositive(in[j] - max);
      out[j] = e;
      sum += e;
    }
    for (int l = 0; l < kLanes; ++l) sum += lanes[l];
    const float scale = static_cast<float>(1.0 / sum);
    for (std::int64_t k = 0; k < n; ++k) out[k] *= scale;
  }
}

}  // namespace weir::internal
