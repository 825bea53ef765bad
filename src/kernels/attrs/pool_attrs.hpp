#pragma once
// Typed attributes of the pooling backward ops, shared by their definitions (graph/ops) and kernels.
#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// avg_pool2d_grad (dy -> dx): the forward pooling's attrs and x's shape, which dy alone does not
/// determine (strides drop trailing pixels; SAME padding hides the window size).
struct Pool2DGradAttrs {
  Pool2DAttrs pool;
  Shape x_shape;
};

}  // namespace weir::internal
