#pragma once
// argwhere's math, for the CPU kernel and the CUDA kernel's device code alike: which elements are
// nonzero, and the coordinates of each, written as rows in x's row-major order. The CPU kernel runs
// one range over all of x; the CUDA kernel counts ranges ("chunks") in parallel, turns the counts
// into each chunk's first row, then writes each chunk's rows in parallel.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// x's dims, passed by value to device code.
struct ArgwhereShape {
  static constexpr int kMaxRank = 12;
  std::int64_t dims[kMaxRank] = {};
  int rank = 0;
};

/// Whether an element is nonzero as numpy reads it: -0.0 is zero, NaN is not.
template <typename T> WEIR_HOST_DEVICE bool Nonzero(T value) { return value != T{0}; }

/// A float16 or bfloat16 element as its bits: zero when every bit but the sign is 0.
struct HalfWord {
  std::uint16_t bits;
};
WEIR_HOST_DEVICE inline bool Nonzero(HalfWord value) { return (value.bits & 0x7fffu) != 0; }

/// How many of x[begin..end) are nonzero.
template <typename T> WEIR_HOST_DEVICE std::int64_t CountNonzero(const T* x, std::int64_t begin, std::int64_t end) {
  std::int64_t count = 0;
  for (std::int64_t i = begin; i < end; ++i) count += Nonzero(x[i]) ? 1 : 0;
  return count;
}

/// The coordinates of each nonzero element of x[begin..end), in order, as rows of `out` (rank
/// indices each) from row `first_row` on; returns the number of rows written.
template <typename T, typename Index>
WEIR_HOST_DEVICE std::int64_t WriteNonzeroCoordinates(const T* x, std::int64_t begin, std::int64_t end,
                                                      const ArgwhereShape& shape, Index* out, std::int64_t first_row) {
  std::int64_t row = first_row;
  for (std::int64_t i = begin; i < end; ++i) {
    if (!Nonzero(x[i])) continue;
    Index* coordinates = out + row * shape.rank;
    std::int64_t rest = i;
    for (int axis = shape.rank - 1; axis >= 0; --axis) {
      coordinates[axis] = static_cast<Index>(rest % shape.dims[axis]);
      rest /= shape.dims[axis];
    }
    ++row;
  }
  return row - first_row;
}

}  // namespace weir::internal
