// tanh: the hyperbolic tangent, elementwise.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferTanh(const InferContext& ctx) {
  if (!IsFloating(ctx.inputs[0].dtype)) throw OpError(ctx.op_type, "expects a floating input, got {}", ctx.inputs[0].dtype);
  return {ctx.inputs[0]};
}

// Computed from the output y, so the input need not be kept.
std::vector<Blob> TanhGradient(const GradContext& ctx) { return {TanhGrad(ctx.output_grads[0], ctx.outputs[0])}; }

WEIR_REGISTER_OP({.type = "tanh",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferTanh,
                  .gradient = TanhGradient,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace internal

Blob Tanh(const Blob& x, std::string_view name) { return internal::AddOp1("tanh", {x}, std::any{}, name); }

}  // namespace weir
