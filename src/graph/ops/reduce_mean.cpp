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

WEIR_REGISTER_OP({.type = "reduce_mean", .num_inputs = 1, .input_names = {"x"}, .infer = InferReduceMean});

}  // namespace
}  // namespace internal

Blob ReduceMean(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_mean", {x}, std::move(attrs), name);
}

}  // namespace weir
