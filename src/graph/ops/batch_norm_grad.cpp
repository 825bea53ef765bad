// batch_norm_grad: (dy, x, gamma, mean, variance) -> (dx, dgamma, dbeta). With x̂ = (x − mean)·s,
// s = 1/sqrt(variance + epsilon) and M elements per channel: dbeta = Σdy, dgamma = Σdy·x̂, and
// dx = gamma·s·(dy − (dbeta + x̂·dgamma)/M) in training (the statistics depend on x), gamma·s·dy in
// inference (they are constants). A 16-bit x (and dy) may come with f32 parameters and statistics.
#include "graph/op_registry.hpp"
#include "kernels/attrs/batch_norm_attrs.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferBatchNormGrad(const InferContext& ctx) {
  const auto& attrs = ctx.Get<BatchNormAttrs>();
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects a floating x, got {}", x.dtype);
  if (dy != x) throw OpError(ctx.op_type, "dy {} does not match x {}", dy.ToString(), x.ToString());
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, x.shape.Rank());
  const TensorMeta params{Shape{x.shape[axis]}, BatchNormParamsDType(x.dtype, ctx.inputs[2].dtype)};
  static constexpr std::string_view kNames[] = {"dy", "x", "gamma", "mean", "variance"};
  for (std::size_t i = 2; i < 5; ++i) {
    if (ctx.inputs[i] != params) {
      throw OpError(ctx.op_type, "{} must be {} for x {} on axis {}, got {}", kNames[i], params.ToString(), x.shape, axis,
                    ctx.inputs[i].ToString());
    }
  }
  return {x, params, params};
}

WEIR_REGISTER_OP({.type = "batch_norm_grad",
                  .num_inputs = 5,
                  .input_names = {"dy", "x", "gamma", "mean", "variance"},
                  .infer = InferBatchNormGrad});

}  // namespace
}  // namespace weir::internal
