#pragma once
// The math of sigmoid_cross_entropy (labels z, logits x) and its gradient, for the CPU kernels and the
// CUDA kernels' device code: loss = max(x, 0) − x z + log1p(e^−|x|), which never overflows.
#include <cmath>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE T SigmoidCrossEntropy(T z, T x) {
  return (x < T(0) ? T(0) : x) - x * z + std::log1p(std::exp(-std::abs(x)));
}
/// d/dz = −x dy; d/dx = (sigmoid(x) − z) dy.
template <typename T> WEIR_HOST_DEVICE void SigmoidCrossEntropyGrad(T z, T x, T dy, T& dz, T& dx) {
  dz = -x * dy;
  dx = (T(1) / (T(1) + std::exp(-x)) - z) * dy;
}

}  // namespace weir::internal
