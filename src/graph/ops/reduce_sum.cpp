// reduce_sum: the sum over some axes (all when none are given), optionally keeping them as 1s.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/reduce.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<Blob> ReduceSumGradient(const GradContext& ctx) {
  return {ReduceGradient(ctx.output_grads[0], ctx.inputs[0].GetShape(), ctx.Get<ReduceAttrs>(), 1.0)};
}

// A reduced axis split gives partial sums; the other axes stay split.
std::vector<SbpSignature> ReduceSumSbp(const SbpContext& ctx) {
  const auto& attrs = ctx.Get<ReduceAttrs>();
  return ReduceSbp(ctx, attrs.axes, attrs.keep_dims, /*sums=*/true);
}

WEIR_REGISTER_OP({.type = "reduce_sum",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferNumberReduction,
                  .gradient = ReduceSumGradient,
                  .sbp = ReduceSumSbp,
                  .read_attrs = ReadReduceAttrs()});

}  // namespace
}  // namespace internal

Blob ReduceSum(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_sum", {x}, std::move(attrs), name);
}

}  // namespace weir
