// sparse_softmax_cross_entropy_grad: d loss / d logits = (softmax(logits) − onehot(labels)) · dy
// per row. The softmax is recomputed from the logits rather than kept from the forward pass.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSparseSoftmaxCrossEntropyGrad(const InferContext& ctx) {
  // labels and logits obey the forward op's rules; dy must be shaped like its loss.
  const InferContext forward{ctx.op_type, ctx.op_name, ctx.attrs, ctx.inputs.first(2)};
  const TensorMeta loss = FindOp("sparse_softmax_cross_entropy").infer(forward).front();
  const TensorMeta& dy = ctx.inputs[2];
  if (dy != loss) throw OpError(ctx.op_type, "dy {} does not match the loss {}", dy.ToString(), loss.ToString());
  return {ctx.inputs[1]};
}

WEIR_REGISTER_OP({.type = "sparse_softmax_cross_entropy_grad",
                  .num_inputs = 3,
                  .input_names = {"labels", "logits", "dy"},
                  .infer = InferSparseSoftmaxCrossEntropyGrad,
                  .sbp = BatchSplitSbp});

}  // namespace

Blob SparseSoftmaxCrossEntropyGrad(const Blob& labels, const Blob& logits, const Blob& dy) {
  return AddOp1("sparse_softmax_cross_entropy_grad", {labels, logits, dy}, std::any{}, {});
}

}  // namespace weir::internal
