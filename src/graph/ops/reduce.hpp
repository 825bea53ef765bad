#pragma once
// Shape inference and the gradient rule shared by the reductions (sum, mean, max/min, prod).
#include <algorithm>
#include <vector>

#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// The attributes of every reduction by name: axes (empty: all) and keep_dims.
inline AttrsReader ReadReduceAttrs() {
  return ReadAttrs<ReduceAttrs>(Attr("axes", &ReduceAttrs::axes), Attr("keep_dims", &ReduceAttrs::keep_dims));
}

/// The output meta of reducing x over attrs.axes (all axes when empty), checking that the axes
/// are in range and distinct.
inline TensorMeta InferReduce(const InferContext& ctx, const ReduceAttrs& attrs, const TensorMeta& x) {
  const int rank = x.shape.Rank();
  std::vector<bool> reduced(static_cast<std::size_t>(rank), attrs.axes.empty());
  for (int axis : attrs.axes) {
    const int resolved = ResolveAxis(ctx.op_type, "axis", axis, rank);
    if (reduced[static_cast<std::size_t>(resolved)]) {
      throw OpError(ctx.op_type, "axes [{}] name axis {} twice for x {}", fmt::join(attrs.axes, ","), resolved, x.shape);
    }
    reduced[static_cast<std::size_t>(resolved)] = true;
  }
  std::vector<std::int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[static_cast<std::size_t>(i)]) {
      dims.push_back(x.shape[i]);
    } else if (attrs.keep_dims) {
      dims.push_back(1);
    }
  }
  return {Shape(std::move(dims)), x.dtype};
}

/// The inference of a reduction of numbers (reduce_sum, reduce_max/min, reduce_prod): an x of
/// IsNumber's dtypes, reduced over the op's ReduceAttrs.
inline std::vector<TensorMeta> InferNumberReduction(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  if (!IsNumber(x.dtype)) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 input, got {}", x.dtype);
  }
  return {InferReduce(ctx, ctx.Get<ReduceAttrs>(), x)};
}

/// The gradient of reducing x over attrs.axes: dy · scale, with the reduced axes put back as 1s
/// and broadcast to x's shape. Scaling first touches only the (smaller) reduced tensor. x_shape is
/// a copy: adding ops may move the shapes Blob::GetShape() refers to.
inline Blob ReduceGradient(const Blob& dy, Shape x_shape, const ReduceAttrs& attrs, double scale) {
  std::vector<std::int64_t> kept = x_shape.Dims();
  const int rank = x_shape.Rank();
  if (attrs.axes.empty()) {
    std::fill(kept.begin(), kept.end(), 1);
  } else {
    for (int axis : attrs.axes) kept[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = 1;
  }
  Blob grad = scale == 1.0 ? dy : ScalarMul(dy, scale);
  if (grad.GetShape().Dims() != kept) grad = Reshape(grad, {.shape = kept});
  return BroadcastTo(grad, std::move(x_shape));
}

}  // namespace weir::internal
