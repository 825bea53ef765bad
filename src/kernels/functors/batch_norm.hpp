#pragma once
// The math of batch normalization, for the CPU reference kernels and the CUDA kernels' device code:
// x seen as (outer, channels, inner) around the channel axis, statistics in double.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct ChannelLayout {
  std::int64_t outer = 1, channels = 1, inner = 1;
  WEIR_HOST_DEVICE std::int64_t PerChannel() const { return outer * inner; }
  /// The index in x of element j (0 <= j < PerChannel()) of channel c.
  WEIR_HOST_DEVICE std::int64_t Index(std::int64_t c, std::int64_t j) const {
    return ((j / inner) * channels + c) * inner + j % inner;
  }
};

/// The training gradient of one element: γ/σ (dy − (Σdy + x̂ Σ(dy x̂)) / count).
WEIR_HOST_DEVICE inline double BatchNormTrainingDx(double scale, double dy, double normalized, double dbeta,
                                                   double dgamma, double count) {
  return scale * (dy - (dbeta + normalized * dgamma) / count);
}

/// moving = momentum moving + (1 − momentum) batch, the variance made unbiased (Bessel) by `unbias`.
template <typename T>
WEIR_HOST_DEVICE void MovingStatistics(T& moving_mean, T& moving_variance, T mean, T variance, double momentum,
                                       double unbias) {
  // In double (16-bit values convert through float), rounded to T once.
  moving_mean = static_cast<T>(momentum * static_cast<double>(moving_mean) + (1 - momentum) * static_cast<double>(mean));
  moving_variance = static_cast<T>(momentum * static_cast<double>(moving_variance) +
                                   (1 - momentum) * static_cast<double>(variance) * unbias);
}

}  // namespace weir::internal
