#pragma once
// Typed attributes of conv2d's backward ops, shared by their definitions (graph/ops) and kernels.
#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// conv2d_grad_data (dy, weight -> dx) and conv2d_grad_filter (dy, x -> dweight): the forward
/// conv's attrs and the shape of the result (x's or weight's), which dy alone does not determine
/// (strides drop trailing pixels; SAME padding hides the kernel size).
struct Conv2DGradAttrs {
  Conv2DAttrs conv;
  Shape shape;
};

}  // namespace weir::internal
