#pragma once
// A shape seen around one axis, for the CPU and CUDA kernels that work along an axis (softmax, argmax).
#include <cstdint>

#include "weir/shape.hpp"

namespace weir::internal {

/// A shape seen as (outer, n, inner) around one axis, for kernels that work along an axis.
struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;

  AxisSplit(const Shape& shape, int axis) {
    const int resolved = axis < 0 ? axis + shape.Rank() : axis;
    n = shape[resolved];
    for (int i = 0; i < resolved; ++i) outer *= shape[i];
    for (int i = resolved + 1; i < shape.Rank(); ++i) inner *= shape[i];
  }
};

}  // namespace weir::internal
