// sigmoid_cross_entropy: elementwise logistic loss of logits x against labels z (OneFlow's
// sigmoid_cross_entropy_with_logits), max(x, 0) − x·z + log(1 + e^−|x|).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferSigmoidCrossEntropy(const InferContext& ctx) {
  const TensorMeta& labels = ctx.inputs[0];
  const TensorMeta& logits = ctx.inputs[1];
  if (!IsFloating(logits.dtype)) throw OpError(ctx.op_type, "expects floating logits, got {}", logits.dtype);
  if (labels.dtype != logits.dtype) {
    throw OpError(ctx.op_type, "dtypes differ: labels {} vs logits {}", labels.dtype, logits.dtype);
  }
  if (labels.shape != logits.shape) {
    throw OpError(ctx.op_type, "labels {} do not match logits {}", labels.shape, logits.shape);
  }
  return {logits};
}

// d/dx = (sigmoid(x) − z) · dy, d/dz = −x · dy: one backward op with both as outputs.
std::vector<Blob> SigmoidCrossEntropyGradient(const GradContext& ctx) {
  std::vector<Blob> grads =
      AddOp("sigmoid_cross_entropy_grad", {ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0]}, std::any{}, {});
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!ctx.needs_grad[i]) grads[i] = Blob();
  }
  return grads;
}

WEIR_REGISTER_OP({.type = "sigmoid_cross_entropy",
                  .num_inputs = 2,
                  .input_names = {"labels", "logits"},
                  .infer = InferSigmoidCrossEntropy,
                  .gradient = SigmoidCrossEntropyGradient,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace internal

Blob SigmoidCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name) {
  return internal::AddOp1("sigmoid_cross_entropy", {labels, logits}, std::any{}, name);
}

}  // namespace weir
