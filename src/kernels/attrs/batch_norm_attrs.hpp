#pragma once
// Typed attributes of batch_norm_moving_update, shared by its definition (graph/ops) and kernel.
#include <cstdint>

namespace weir::internal {

/// moving = momentum · moving + (1 − momentum) · batch statistic, the variance made unbiased with
/// `count` (elements per channel): var · count / (count − 1).
struct BatchNormMovingUpdateAttrs {
  double momentum = 0.99;
  std::int64_t count = 1;
};

}  // namespace weir::internal
