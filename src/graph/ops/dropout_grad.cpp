// dropout_grad: dx = dy · mask / (1 - rate), the mask being dropout's second output.
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferDropoutGrad(const InferContext& ctx) {
  if (ctx.inputs[1] != TensorMeta{ctx.inputs[0].shape, DType::kU8}) {
    throw OpError(ctx.op_type, "mask {} does not match dy {}", ctx.inputs[1].ToString(), ctx.inputs[0].ToString());
  }
  return {ctx.inputs[0]};
}

WEIR_REGISTER_OP({.type = "dropout_grad", .num_inputs = 2, .input_names = {"dy", "mask"}, .infer = InferDropoutGrad,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace weir::internal
