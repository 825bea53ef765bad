#pragma once
// Typed attributes of batch_norm_moving_update, shared by its definition (graph/ops) and kernel, and
// the dtype rule of batch_norm's parameters, shared by batch_norm and batch_norm_grad.
#include <cstdint>

#include "weir/dtype.hpp"

namespace weir::internal {

/// moving = momentum · moving + (1 − momentum) · batch statistic, the variance made unbiased with
/// `count` (elements per channel): var · count / (count − 1).
struct BatchNormMovingUpdateAttrs {
  double momentum = 0.99;
  std::int64_t count = 1;
};

/// The dtype batch_norm's parameters and statistics must have for an x of dtype `x`, given `gamma`'s:
/// x's own, or f32 with a 16-bit x (mixed precision keeps them f32).
inline DType BatchNormParamsDType(DType x, DType gamma) {
  return (x == DType::kF16 || x == DType::kBF16) && gamma == DType::kF32 ? DType::kF32 : x;
}

}  // namespace weir::internal
