#pragma once
// The math of combined_margin_loss (the additive and multiplicative angular margins of SphereFace,
// ArcFace and CosFace in one op) for the CPU kernels and the CUDA kernels' device code. x holds
// cosines; the label's entry of each row becomes cos(m1 * theta + m2) - m3 with theta = acos(x), the
// other entries stay as they are.
#include <cmath>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// combined_margin_loss's attributes (OneFlow's m1, m2, m3): m1 multiplies the angle, m2 adds to it,
/// m3 is taken off its cosine. (1, 0, 0) leaves x as it is.
struct CombinedMarginAttrs {
  double m1 = 1.0;
  double m2 = 0.0;
  double m3 = 0.0;
};

template <typename T> struct CombinedMargin {
  T m1, m2, m3;

  explicit CombinedMargin(const CombinedMarginAttrs& attrs)
      : m1(static_cast<T>(attrs.m1)), m2(static_cast<T>(attrs.m2)), m3(static_cast<T>(attrs.m3)) {}

  /// The label's entry: cos(m1 * acos(x) + m2) - m3 (NaN for a cosine outside [-1, 1]).
  WEIR_HOST_DEVICE T Forward(T x) const { return std::cos(m1 * std::acos(x) + m2) - m3; }

  /// d Forward / dx = m1 * sin(m1 * theta + m2) / sin(theta), as OneFlow computes it: infinite or NaN
  /// where sin(theta) is 0 (x = +-1), unless m1 = 1 and m2 = 0, where the margin is the identity.
  WEIR_HOST_DEVICE T Derivative(T x) const {
    if (m1 == T(1) && m2 == T(0)) return T(1);
    const T theta = std::acos(x);
    return m1 * std::sin(m1 * theta + m2) / std::sin(theta);
  }
};

}  // namespace weir::internal
