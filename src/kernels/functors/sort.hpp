#pragma once
// The order of argsort along the last axis, for the CPU kernel and the CUDA kernel's device code alike:
// ascending or descending by value, a NaN counting as the largest (argmax's Beats: numpy's order), and
// equal values in index order (a stable sort; TensorFlow's top_k, too, puts the lower index first).
#include <cstdint>

#include "kernels/functors/argmax.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// argsort's attributes: the direction (OneFlow's "ASCENDING" / "DESCENDING").
struct ArgSortAttrs {
  bool descending = false;
};

/// Whether element `a` (at index ia) comes before element `b` (at index ib).
template <typename T>
WEIR_HOST_DEVICE bool SortsBefore(T a, std::int64_t ia, T b, std::int64_t ib, bool descending) {
  if (descending ? Beats(a, b) : Beats(b, a)) return true;
  if (descending ? Beats(b, a) : Beats(a, b)) return false;
  return ia < ib;
}

/// Where element i of a row of n ends up: how many elements sort before it (the CUDA kernel's rank).
template <typename T>
WEIR_HOST_DEVICE std::int64_t SortedPosition(const T* row, std::int64_t n, std::int64_t i, bool descending) {
  std::int64_t position = 0;
  for (std::int64_t j = 0; j < n; ++j) position += SortsBefore(row[j], j, row[i], i, descending) ? 1 : 0;
  return position;
}

}  // namespace weir::internal
