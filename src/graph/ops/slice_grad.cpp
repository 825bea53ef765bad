// slice_grad: dx of x's shape with dy where the slice took its elements from, zeros elsewhere.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/slice_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSliceGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const auto& attrs = ctx.Get<SliceGradAttrs>();
  std::string why;
  const std::optional<std::vector<SliceAxis>> axes = ResolveSlice(attrs.x_shape, attrs.slice, why);
  if (!axes) throw OpError(ctx.op_type, "{} of x {}", why, attrs.x_shape);
  std::vector<std::int64_t> dims;
  for (const SliceAxis& axis : *axes) dims.push_back(axis.length);
  if (dy.shape != Shape(dims)) throw OpError(ctx.op_type, "dy {} is not the slice's shape {}", dy.shape, Shape(dims));
  return {{attrs.x_shape, dy.dtype}};
}

WEIR_REGISTER_OP({.type = "slice_grad", .num_inputs = 1, .input_names = {"dy"}, .infer = InferSliceGrad});

}  // namespace
}  // namespace weir::internal
