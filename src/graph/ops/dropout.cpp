// dropout: y = x · mask / (1 - rate) with a fresh Bernoulli(1 - rate) mask per call; the mask is a
// second (u8) output so that the gradient reuses it.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/dropout_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferDropout(const InferContext& ctx) {
  if (!IsFloating(ctx.inputs[0].dtype)) throw OpError(ctx.op_type, "expects a floating input, got {}", ctx.inputs[0].dtype);
  return {ctx.inputs[0], {ctx.inputs[0].shape, DType::kU8}};
}

std::vector<Blob> DropoutGradient(const GradContext& ctx) {
  return {AddOp1("dropout_grad", {ctx.output_grads[0], ctx.outputs[1]}, ctx.Get<DropoutAttrs>(), {})};
}

WEIR_REGISTER_OP({.type = "dropout", .num_inputs = 1, .input_names = {"x"}, .infer = InferDropout,
                  .gradient = DropoutGradient});

}  // namespace
}  // namespace weir::internal
