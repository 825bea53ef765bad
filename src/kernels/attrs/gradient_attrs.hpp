#pragma once
// Typed attributes shared by the backward ops' definitions (graph/ops) and their kernels.
#include "weir/shape.hpp"

namespace weir::internal {

/// broadcast_to: x repeated (numpy broadcasting) to `shape`.
struct BroadcastToAttrs {
  Shape shape;
};

/// reduce_sum_to: x summed down to `shape`, a shape that broadcasts to x's (the adjoint of
/// broadcast_to, which reduces a broadcast operand's gradient back to its shape).
struct ReduceSumToAttrs {
  Shape shape;
};

}  // namespace weir::internal
