#pragma once
// Shape checks shared by the optimizer update ops: (variable, gradient, learning rate, slots...),
// all slots shaped like the variable, no outputs (the variable and slots are updated in place).
#include "graph/op_registry.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {

/// `ctx` without an update's skip flag (UpdateAttrs::skip_if: its last input, f32(1)), checked.
inline InferContext WithoutSkipFlag(const InferContext& ctx) {
  if (!ctx.Get<UpdateAttrs>().skip_if) return ctx;
  if (ctx.inputs.size() < 4 || ctx.inputs.back() != TensorMeta{Shape{1}, DType::kF32}) {
    throw OpError(ctx.op_type, "expects its skip flag as the last input, f32(1), got {}",
                  ctx.inputs.empty() ? std::string("no inputs") : ctx.inputs.back().ToString());
  }
  InferContext update = ctx;
  update.inputs = ctx.inputs.first(ctx.inputs.size() - 1);
  return update;
}

/// (variable, gradient, learning rate, slots...) without a skip flag.
inline void CheckUpdateInputs(const InferContext& ctx) {
  const TensorMeta& variable = ctx.inputs[0];
  if (!IsFloating(variable.dtype)) throw OpError(ctx.op_type, "expects a floating variable, got {}", variable.dtype);
  if (ctx.inputs[1] != variable) {
    throw OpError(ctx.op_type, "gradient {} does not match variable {}", ctx.inputs[1].ToString(), variable.ToString());
  }
  if (ctx.inputs[2] != TensorMeta{Shape{1}, DType::kF32}) {
    throw OpError(ctx.op_type, "learning rate must be f32(1), got {}", ctx.inputs[2].ToString());
  }
  for (std::size_t i = 3; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i] != variable) {
      throw OpError(ctx.op_type, "slot {} is {}, expected {}", i - 3, ctx.inputs[i].ToString(), variable.ToString());
    }
  }
}

inline std::vector<TensorMeta> InferUpdate(const InferContext& ctx) {
  CheckUpdateInputs(WithoutSkipFlag(ctx));
  return {};
}

/// InferUpdate for ops with optional inputs: (variable, gradient, learning rate) and `num_slots`
/// slots, then the train step as i64(1) when `with_train_step` (then the skip flag, if any).
/// `signature` names them all for the error message.
inline std::vector<TensorMeta> InferUpdateWithSlots(const InferContext& flagged, std::size_t num_slots,
                                                    bool with_train_step, std::string_view signature) {
  const InferContext ctx = WithoutSkipFlag(flagged);
  const std::size_t expected = 3 + num_slots + (with_train_step ? 1 : 0);
  if (ctx.inputs.size() != expected) {
    throw OpError(ctx.op_type, "expects {} inputs ({}), got {}", expected, signature, ctx.inputs.size());
  }
  InferContext update = ctx;
  update.inputs = ctx.inputs.first(3 + num_slots);
  CheckUpdateInputs(update);
  if (with_train_step && ctx.inputs.back() != TensorMeta{Shape{1}, DType::kI64}) {
    throw OpError(ctx.op_type, "expects the train step as i64(1), got {}", ctx.inputs.back().ToString());
  }
  return {};
}

}  // namespace weir::internal
