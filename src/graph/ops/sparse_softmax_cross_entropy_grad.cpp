// sparse_softmax_cross_entropy_grad: d loss / d logits = (softmax(logits) − onehot(labels)) · dy
// per row. The softmax is recomputed from the logits rather than kept from the forward pass.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSparseSoftmaxCrossEntropyGrad(const InferContext& ctx) {
  const TensorMeta& labels = ctx.inputs[0];
  const TensorMeta& logits = ctx.inputs[1];
  const TensorMeta& dy = ctx.inputs[2];
  if (labels.dtype != DType::kI32 && labels.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 labels, got {}", labels.dtype);
  }
  if (!IsFloating(logits.dtype)) throw OpError(ctx.op_type, "expects floating logits, got {}", logits.dtype);
  if (labels.shape.Rank() != 1 || logits.shape.Rank() != 2 || labels.shape[0] != logits.shape[0]) {
    throw OpError(ctx.op_type, "expects labels (N) and logits (N,C), got labels {} and logits {}", labels.shape,
                  logits.shape);
  }
  if (dy != TensorMeta{labels.shape, logits.dtype}) {
    throw OpError(ctx.op_type, "dy {} does not match the loss {}", dy.ToString(),
                  TensorMeta{labels.shape, logits.dtype}.ToString());
  }
  return {logits};
}

WEIR_REGISTER_OP({.type = "sparse_softmax_cross_entropy_grad",
                  .num_inputs = 3,
                  .input_names = {"labels", "logits", "dy"},
                  .infer = InferSparseSoftmaxCrossEntropyGrad});

}  // namespace

Blob SparseSoftmaxCrossEntropyGrad(const Blob& labels, const Blob& logits, const Blob& dy) {
  return AddOp1("sparse_softmax_cross_entropy_grad", {labels, logits, dy}, std::any{}, {});
}

}  // namespace weir::internal
