// batch_norm_moving_update: moving_mean and moving_variance (variables) move towards a training
// batch's statistics in place: moving = momentum·moving + (1 − momentum)·batch, with the unbiased
// batch variance (as cuDNN and OneFlow's GPU normalization). No outputs: the planner runs it after
// every other reader of the moving statistics in the call, and before the call completes.
#include "graph/op_registry.hpp"
#include "kernels/attrs/batch_norm_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferBatchNormMovingUpdate(const InferContext& ctx) {
  const TensorMeta& moving_mean = ctx.inputs[0];
  if (!IsFloating(moving_mean.dtype) || moving_mean.shape.Rank() != 1) {
    throw OpError(ctx.op_type, "expects a floating 1-D moving_mean, got {}", moving_mean.ToString());
  }
  static constexpr std::string_view kNames[] = {"moving_mean", "moving_variance", "mean", "variance"};
  for (std::size_t i = 1; i < 4; ++i) {
    if (ctx.inputs[i] != moving_mean) {
      throw OpError(ctx.op_type, "{} must be {} like moving_mean, got {}", kNames[i], moving_mean.ToString(),
                    ctx.inputs[i].ToString());
    }
  }
  const auto& attrs = ctx.Get<BatchNormMovingUpdateAttrs>();
  if (!(attrs.momentum >= 0.0 && attrs.momentum <= 1.0)) {
    throw OpError(ctx.op_type, "momentum must be in [0, 1], got {}", attrs.momentum);
  }
  return {};
}

WEIR_REGISTER_OP({.type = "batch_norm_moving_update",
                  .num_inputs = 4,
                  .input_names = {"moving_mean", "moving_variance", "mean", "variance"},
                  .infer = InferBatchNormMovingUpdate,
                  .mutates_inputs = {0, 1}});

}  // namespace
}  // namespace weir::internal
