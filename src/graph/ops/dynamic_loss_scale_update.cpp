// dynamic_loss_scale_update: dynamic loss scaling's schedule (kernels/functors/update.hpp's
// DynamicLossScaleStep), in place on the loss scale f32(1), the count of good steps in a row i64(1) and
// the count of skipped steps i64(1), from the step's flag f32(1): 0 when every gradient was finite (the
// updates read the same flag as their skip_if input).
#include "graph/op_registry.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferDynamicLossScaleUpdate(const InferContext& ctx) {
  const auto& attrs = ctx.Get<DynamicLossScaleAttrs>();
  if (attrs.increment_period < 1) throw OpError(ctx.op_type, "increment_period must be >= 1, got {}", attrs.increment_period);
  if (!(attrs.multiplier > 1)) throw OpError(ctx.op_type, "multiplier must be > 1, got {}", attrs.multiplier);
  const TensorMeta scalar{Shape{1}, DType::kF32}, count{Shape{1}, DType::kI64};
  const std::vector<TensorMeta> expected = {scalar, count, count, scalar};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (ctx.inputs[i] != expected[i]) {
      throw OpError(ctx.op_type, "expects (loss_scale f32(1), good_steps i64(1), skipped_steps i64(1), flag f32(1)); "
                    "input {} is {}", i, ctx.inputs[i].ToString());
    }
  }
  return {};
}

WEIR_REGISTER_OP({.type = "dynamic_loss_scale_update",
                  .num_inputs = 4,
                  .input_names = {"loss_scale", "good_steps", "skipped_steps", "flag"},
                  .infer = InferDynamicLossScaleUpdate,
                  .mutates_inputs = {0, 1, 2}});

}  // namespace
}  // namespace weir::internal
