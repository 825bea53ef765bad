// slice_grad: dx of x's shape with dy where the slice took its elements from, zeros elsewhere. It is
// also flow.pad (with a zero fill): linear in dy, its own gradient is the slice of the incoming one.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/slice_attrs.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSliceGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const auto& attrs = ctx.Get<SliceGradAttrs>();
  std::string why;
  const std::optional<std::vector<SliceAxis>> axes = ResolveSlice(attrs.x_shape, attrs.slice, why);
  if (!axes) throw OpError(ctx.op_type, "{} of x {}", why, attrs.x_shape);
  const Shape sliced = SliceShape(*axes);
  if (dy.shape != sliced) throw OpError(ctx.op_type, "dy {} is not the slice's shape {}", dy.shape, sliced);
  return {{attrs.x_shape, dy.dtype}};
}

std::vector<Blob> SliceGradGradient(const GradContext& ctx) {
  return {Slice(ctx.output_grads[0], ctx.Get<SliceGradAttrs>().slice)};
}

WEIR_REGISTER_OP({.type = "slice_grad",
                  .num_inputs = 1,
                  .input_names = {"dy"},
                  .infer = InferSliceGrad,
                  .gradient = SliceGradGradient,
                  // By name: the slice's start, stop and step, and x's shape (the padded shape, for flow.pad).
                  .read_attrs = ReadAttrsWithShape("slice", &SliceGradAttrs::slice, &SliceGradAttrs::x_shape)});

}  // namespace
}  // namespace weir::internal
