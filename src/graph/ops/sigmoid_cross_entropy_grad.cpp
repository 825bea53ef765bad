// sigmoid_cross_entropy_grad (labels, logits, dy) -> (dlabels, dlogits):
// dlabels = −logits · dy, dlogits = (sigmoid(logits) − labels) · dy.
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSigmoidCrossEntropyGrad(const InferContext& ctx) {
  const InferContext forward{ctx.op_type, ctx.op_name, ctx.attrs, ctx.inputs.first(2)};
  const TensorMeta loss = FindOp("sigmoid_cross_entropy").infer(forward).front();
  const TensorMeta& dy = ctx.inputs[2];
  if (dy != loss) throw OpError(ctx.op_type, "dy {} does not match the loss {}", dy.ToString(), loss.ToString());
  return {ctx.inputs[0], ctx.inputs[1]};
}

WEIR_REGISTER_OP({.type = "sigmoid_cross_entropy_grad",
                  .num_inputs = 3,
                  .input_names = {"labels", "logits", "dy"},
                  .infer = InferSigmoidCrossEntropyGrad,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace weir::internal
