// relu: max(x, 0), elementwise.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferRelu(const InferContext& ctx) {
  if (!IsFloating(ctx.inputs[0].dtype)) throw OpError(ctx.op_type, "expects a floating input, got {}", ctx.inputs[0].dtype);
  return {ctx.inputs[0]};
}

// Computed from the output y, so the input need not be kept.
std::vector<Blob> ReluGradient(const GradContext& ctx) { return {ReluGrad(ctx.output_grads[0], ctx.outputs[0])}; }

WEIR_REGISTER_OP({.type = "relu",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferRelu,
                  .gradient = ReluGradient,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace internal

Blob Relu(const Blob& x, std::string_view name) { return internal::AddOp1("relu", {x}, std::any{}, name); }

}  // namespace weir
