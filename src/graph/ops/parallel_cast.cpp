// parallel_cast: x itself, with a hint of how the consistent view lays it (and its gradient) out on
// the devices. The planner boxes its input into the hinted SBP and aliases the result.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferParallelCast(const InferContext& ctx) {
  const auto& attrs = ctx.Get<ParallelCastAttrs>();
  for (const Distribute& hint : {attrs.value, attrs.gradient}) {
    if (hint.kind == Distribute::Kind::kSplit && (hint.axis < 0 || hint.axis >= ctx.inputs[0].shape.Rank())) {
      throw OpError(ctx.op_type, "split axis {} out of range for x {}", hint.axis, ctx.inputs[0].shape);
    }
  }
  return {ctx.inputs[0]};
}

// The gradient carries the gradient hint.
std::vector<Blob> ParallelCastGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<ParallelCastAttrs>();
  if (attrs.gradient.kind == Distribute::Kind::kAuto) return {ctx.output_grads[0]};
  return {ParallelCast(ctx.output_grads[0], {.value = attrs.gradient})};
}

WEIR_REGISTER_OP({.type = "parallel_cast",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferParallelCast,
                  .gradient = ParallelCastGradient,
                  .read_attrs = ReadAttrs<ParallelCastAttrs>(Attr("distribute", &ParallelCastAttrs::value),
                                                           Attr("gradient_distribute", &ParallelCastAttrs::gradient))});

}  // namespace
}  // namespace internal

Blob ParallelCast(const Blob& x, ParallelCastAttrs attrs, std::string_view name) {
  return internal::AddOp1("parallel_cast", {x}, attrs, name);
}

}  // namespace weir
