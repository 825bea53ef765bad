#pragma once
// The math of argmax along an axis, for the CPU kernel and the CUDA kernel's device code alike: the
// first maximum wins, and a NaN beats any number (numpy's argmax).
#include <cstdint>
#include <type_traits>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE bool Beats(T value, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    return value > best || (value != value && best == best);
  } else {
    return value > best;
  }
}

/// The index of the largest of n elements `stride` apart.
template <typename T> WEIR_HOST_DEVICE std::int64_t ArgMaxAlong(const T* in, std::int64_t n, std::int64_t stride) {
  std::int64_t best = 0;
  for (std::int64_t j = 1; j < n; ++j) {
    if (Beats(in[j * stride], in[best * stride])) best = j;
  }
  return best;
}

}  // namespace weir::internal
