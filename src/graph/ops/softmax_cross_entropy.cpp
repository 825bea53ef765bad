// softmax_cross_entropy: per row, -sum_c labels_c · log_softmax(logits)_c for dense label
// distributions (OneFlow's softmax_cross_entropy_with_logits), along the last axis.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferSoftmaxCrossEntropy(const InferContext& ctx) {
  const TensorMeta& labels = ctx.inputs[0];
  const TensorMeta& logits = ctx.inputs[1];
  if (!IsFloating(logits.dtype)) throw OpError(ctx.op_type, "expects floating logits, got {}", logits.dtype);
  if (labels.dtype != logits.dtype) {
    throw OpError(ctx.op_type, "dtypes differ: labels {} vs logits {}", labels.dtype, logits.dtype);
  }
  if (logits.shape.Rank() == 0) throw OpError(ctx.op_type, "expects logits (..., C), got a 0-D {}", logits.shape);
  if (labels.shape != logits.shape) {
    throw OpError(ctx.op_type, "labels {} do not match logits {}", labels.shape, logits.shape);
  }
  if (logits.shape[logits.shape.Rank() - 1] == 0) throw OpError(ctx.op_type, "logits {} have no classes", logits.shape);
  std::vector<std::int64_t> dims = logits.shape.Dims();
  dims.pop_back();
  return {{Shape(std::move(dims)), logits.dtype}};
}

// One backward op computes both gradients (it has two outputs); the softmax is recomputed there.
std::vector<Blob> SoftmaxCrossEntropyGradient(const GradContext& ctx) {
  std::vector<Blob> grads =
      AddOp("softmax_cross_entropy_grad", {ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0]}, std::any{}, {});
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!ctx.needs_grad[i]) grads[i] = Blob();
  }
  return grads;
}

WEIR_REGISTER_OP({.type = "softmax_cross_entropy",
                  .num_inputs = 2,
                  .input_names = {"labels", "logits"},
                  .infer = InferSoftmaxCrossEntropy,
                  .gradient = SoftmaxCrossEntropyGradient,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace internal

Blob SoftmaxCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name) {
  return internal::AddOp1("softmax_cross_entropy", {labels, logits}, std::any{}, name);
}

}  // namespace weir
