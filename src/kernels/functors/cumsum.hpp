#pragma once
// cumsum's math, for the CPU kernel and the CUDA kernel's device code alike: the running sum of one
// line of x along the axis (n elements `stride` apart), in the line's order or from its end, with or
// without each element itself.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T>
WEIR_HOST_DEVICE void CumsumLine(const T* x, T* y, std::int64_t n, std::int64_t stride, bool exclusive, bool reverse) {
  T sum{0};
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = (reverse ? n - 1 - k : k) * stride;
    const T value = x[i];
    if (!exclusive) sum += value;
    y[i] = sum;
    if (exclusive) sum += value;
  }
}

}  // namespace weir::internal
