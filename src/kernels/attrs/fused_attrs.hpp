#pragma once
// Attributes of the kernels the planner fuses (graph/fusion.hpp): an op, the bias_add that follows
// it and an optional relu; or a weight gradient's matmul and the SGD update that reads it. These
// kernels exist only in plans: jobs never contain them.
#include <cstdint>

#include "weir/op_attrs.hpp"

namespace weir::internal {

enum class FusedActivation : std::uint8_t { kNone, kRelu };

/// conv2d_bias_act: (x, weight, bias) -> act(conv2d(x, weight) + bias), bias along the channels; with
/// `add_residual`, (x, weight, bias, residual) -> act(conv2d(x, weight) + bias + residual), the residual
/// of y's shape and dtype (a ResNet block's sum with its shortcut; CPU, channels-last only).
struct FusedConv2DAttrs {
  Conv2DAttrs conv;
  FusedActivation activation = FusedActivation::kNone;
  bool add_residual = false;
};

/// matmul_bias_act: (a, b, bias) -> act(matmul(a, b) + bias), bias along the columns.
struct FusedMatMulAttrs {
  MatMulAttrs matmul;
  FusedActivation activation = FusedActivation::kNone;
};

/// matmul_sgd_update: (a, b, variable, learning rate) -> variable -= lr * scale * matmul(a, b), in
/// place; no output. The gradient never exists as a tensor.
struct FusedMatMulSgdAttrs {
  MatMulAttrs matmul;
  double gradient_scale = 1.0;  // the update's (UpdateAttrs::gradient_scale)
};

}  // namespace weir::internal
