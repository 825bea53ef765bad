#pragma once
// Shape checks shared by the optimizer update ops: (variable, gradient, learning rate, slots...),
// all slots shaped like the variable, no outputs (the variable and slots are updated in place).
#include "graph/op_registry.hpp"

namespace weir::internal {

inline std::vector<TensorMeta> InferUpdate(const InferContext& ctx) {
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
  return {};
}

}  // namespace weir::internal
