// sparse_softmax_cross_entropy: per-row -log(softmax(logits)[label]) for integer class labels.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferSparseSoftmaxCrossEntropy(const InferContext& ctx) {
  const TensorMeta& labels = ctx.inputs[0];
  const TensorMeta& logits = ctx.inputs[1];
  if (labels.dtype != DType::kI32 && labels.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 labels, got {}", labels.dtype);
  }
  if (!IsFloating(logits.dtype)) throw OpError(ctx.op_type, "expects floating logits, got {}", logits.dtype);
  if (labels.shape.Rank() != 1 || logits.shape.Rank() != 2 || labels.shape[0] != logits.shape[0]) {
    throw OpError(ctx.op_type, "expects labels (N) and logits (N,C), got labels {} and logits {}", labels.shape,
                  logits.shape);
  }
  if (logits.shape[1] == 0) throw OpError(ctx.op_type, "logits {} have no classes", logits.shape);
  return {{Shape{labels.shape[0]}, logits.dtype}};
}

// Only the logits have a gradient; integer labels get none.
std::vector<Blob> SparseSoftmaxCrossEntropyGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[1]) return {Blob(), Blob()};
  return {Blob(), SparseSoftmaxCrossEntropyGrad(ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0])};
}

WEIR_REGISTER_OP({.type = "sparse_softmax_cross_entropy",
                  .num_inputs = 2,
                  .input_names = {"labels", "logits"},
                  .infer = InferSparseSoftmaxCrossEntropy,
                  .gradient = SparseSoftmaxCrossEntropyGradient,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace internal

Blob SparseSoftmaxCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name) {
  return internal::AddOp1("sparse_softmax_cross_entropy", {labels, logits}, std::any{}, name);
}

}  // namespace weir
