// reduce_mean: the mean over some axes (all when none are given), optionally keeping them as 1s.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/reduce.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferReduceMean(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects a floating input, got {}", x.dtype);
  return {InferReduce(ctx, ctx.Get<ReduceAttrs>(), x)};
}

// Each input element contributes 1/count of the mean it falls in.
std::vector<Blob> ReduceMeanGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<ReduceAttrs>();
  const Shape x = ctx.inputs[0].GetShape();
  std::int64_t count = attrs.axes.empty() ? x.NumElements() : 1;
  for (int axis : attrs.axes) count *= x[axis];
  // An empty reduction has no elements to send a gradient to; any scale will do.
  return {ReduceGradient(ctx.output_grads[0], x, attrs, count == 0 ? 1.0 : 1.0 / static_cast<double>(count))};
}

// Only the axes kept split: a mean over a split axis is not the sum of the pieces' means.
std::vector<SbpSignature> ReduceMeanSbp(const SbpContext& ctx) {
  const auto& attrs = ctx.Get<ReduceAttrs>();
  return ReduceSbp(ctx, attrs.axes, attrs.keep_dims, /*sums=*/false);
}

WEIR_REGISTER_OP({.type = "reduce_mean",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferReduceMean,
                  .gradient = ReduceMeanGradient,
                  .sbp = ReduceMeanSbp,
                  .read_attrs = ReadReduceAttrs()});

}  // namespace
}  // namespace internal

Blob ReduceMean(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_mean", {x}, std::move(attrs), name);
}

}  // namespace weir
