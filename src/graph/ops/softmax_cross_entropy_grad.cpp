// softmax_cross_entropy_grad (labels, logits, dy) -> (dlabels, dlogits): per row,
// dlabels = -log_softmax(logits) · dy and dlogits = (softmax(logits) · sum(labels) − labels) · dy.
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSoftmaxCrossEntropyGrad(const InferContext& ctx) {
  // labels and logits obey the forward op's rules; dy must be shaped like its loss.
  const InferContext forward{ctx.op_type, ctx.op_name, ctx.attrs, ctx.inputs.first(2)};
  const TensorMeta loss = FindOp("softmax_cross_entropy").infer(forward).front();
  const TensorMeta& dy = ctx.inputs[2];
  if (dy != loss) throw OpError(ctx.op_type, "dy {} does not match the loss {}", dy.ToString(), loss.ToString());
  return {ctx.inputs[0], ctx.inputs[1]};
}

WEIR_REGISTER_OP({.type = "softmax_cross_entropy_grad",
                  .num_inputs = 3,
                  .input_names = {"labels", "logits", "dy"},
                  .infer = InferSoftmaxCrossEntropyGrad,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace weir::internal
