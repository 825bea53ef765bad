// avg_pool2d_grad: dx spreads each window's dy evenly over the pixels of x the window covers.
#include "graph/ops/pool_infer.hpp"
#include "kernels/attrs/pool_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferAvgPool2DGrad(const InferContext& ctx) {
  const auto& attrs = ctx.Get<Pool2DGradAttrs>();
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta x{attrs.x_shape, dy.dtype};
  const TensorMeta y = InferPool2DOutput(ctx.op_type, x, attrs.pool);
  if (dy != y) throw OpError(ctx.op_type, "dy {} does not match the pooling of x {}: {}", dy.ToString(), x.ToString(), y.ToString());
  return {x};
}

WEIR_REGISTER_OP({.type = "avg_pool2d_grad", .num_inputs = 1, .input_names = {"dy"}, .infer = InferAvgPool2DGrad,
                  .sbp = BatchSplitSbp});

}  // namespace
}  // namespace weir::internal
