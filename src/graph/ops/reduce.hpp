#pragma once
// Shape inference shared by reduce_sum and reduce_mean.
#include <vector>

#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

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

}  // namespace weir::internal
