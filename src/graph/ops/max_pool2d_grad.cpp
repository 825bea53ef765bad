// max_pool2d_grad: dx gets each window's dy at the position of that window's maximum in x (one
// position per window), zero elsewhere.
#include "graph/ops/pool_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferMaxPool2DGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  const TensorMeta y = InferPool2DOutput(ctx.op_type, x, ctx.Get<Pool2DAttrs>());
  if (dy != y) throw OpError(ctx.op_type, "dy {} does not match the pooling of x {}: {}", dy.ToString(), x.ToString(), y.ToString());
  return {x};
}

WEIR_REGISTER_OP({.type = "max_pool2d_grad", .num_inputs = 2, .input_names = {"dy", "x"}, .infer = InferMaxPool2DGrad,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace weir::internal
