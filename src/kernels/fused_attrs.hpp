#pragma once
// Attributes of the kernels the planner fuses from an op, the bias_add that follows it and an
// optional relu (graph/fusion.hpp). These kernels exist only in plans: jobs never contain them.
#include <cstdint>

#include "weir/ops.hpp"

namespace weir::internal {

enum class FusedActivation : std::uint8_t { kNone, kRelu };

/// conv2d_bias_act: (x, weight, bias) -> act(conv2d(x, weight) + bias), bias along the channels.
struct FusedConv2DAttrs {
  Conv2DAttrs conv;
  FusedActivation activation = FusedActivation::kNone;
};

/// matmul_bias_act: (a, b, bias) -> act(matmul(a, b) + bias), bias along the columns.
struct FusedMatMulAttrs {
  MatMulAttrs matmul;
  FusedActivation activation = FusedActivation::kNone;
};

}  // namespace weir::internal
