#pragma once
// The math of the optimizer updates (OneFlow's model-update kernels), one step of one element, for
// the CPU kernels and the CUDA kernels' device code alike. Every update starts from the regularized
// gradient g' = g·scale + l1·sign(p) + l2·p, scale undoing the loss's element count and loss scale.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> struct RegularizedGradient {
  T scale = 1, l1 = 0, l2 = 0;
  WEIR_HOST_DEVICE T operator()(T g, T p) const { return g * scale + l1 * static_cast<T>((p > 0) - (p < 0)) + l2 * p; }
};

/// p -= lr g'.
template <typename T> WEIR_HOST_DEVICE void SgdStep(T& p, T g, T lr, const RegularizedGradient<T>& regularized) {
  p -= lr * regularized(g, p);
}

/// v = beta v - lr g'; p += v.
template <typename T>
WEIR_HOST_DEVICE void MomentumStep(T& p, T& v, T g, T lr, T beta, const RegularizedGradient<T>& regularized) {
  v = beta * v - lr * regularized(g, p);
  p += v;
}

template <typename T> struct AdamConstants {
  T beta1, beta2;
  T one_minus_beta1, one_minus_beta2;  // 1 − β in double first: 1 − 0.999f is 4.7e-5 off 0.001
  T epsilon, weight_decay;
  bool lazy;  // LazyAdam: elements without a gradient are left alone
};

/// m = β1 m + (1 − β1) g'; v = β2 v + (1 − β2) g'²; p -= lr (m / (√v + ε) + wd p) (AdamW: wd > 0).
template <typename T>
WEIR_HOST_DEVICE void AdamStep(T& p, T& m, T& v, T g, T lr, const AdamConstants<T>& c,
                               const RegularizedGradient<T>& regularized) {
  const T grad = regularized(g, p);
  if (c.lazy && std::abs(grad) < T(1e-12)) return;  // OneFlow's LazyAdam threshold
  m = c.beta1 * m + c.one_minus_beta1 * grad;
  v = c.beta2 * v + c.one_minus_beta2 * grad * grad;
  p -= lr * (m / (std::sqrt(v) + c.epsilon) + c.weight_decay * p);
}

/// One step of dynamic loss scaling's schedule (OneFlow's dynamic_loss_scale_schedule): after a step
/// whose gradients were finite (`flag` 0) one more good step, and at `increment_period` of them the
/// scale times `multiplier` (at most FLT_MAX) and the count restarts; after any other step (the
/// updates skipped it) the scale divided by `multiplier` (at least 1), the count restarted and one
/// more skipped step.
WEIR_HOST_DEVICE inline void DynamicLossScaleStep(float flag, float& scale, std::int64_t& good_steps,
                                                  std::int64_t& skipped_steps, std::int64_t increment_period,
                                                  double multiplier) {
  constexpr double kMaxScale = 3.4028234663852886e38;  // FLT_MAX
  if (flag == 0.f) {
    if (++good_steps >= increment_period) {
      const double grown = static_cast<double>(scale) * multiplier;
      scale = static_cast<float>(grown < kMaxScale ? grown : kMaxScale);
      good_steps = 0;
    }
  } else {
    const double shrunk = static_cast<double>(scale) / multiplier;
    scale = static_cast<float>(shrunk > 1.0 ? shrunk : 1.0);
    good_steps = 0;
    ++skipped_steps;
  }
}

/// OneFlow's adam_bias_correction_learning_rate: lr √(1 − β2^t) / (1 − β1^t) with t = train step + 1.
WEIR_HOST_DEVICE inline double AdamBiasCorrectedRate(double lr, double beta1, double beta2, std::int64_t train_step) {
  const double t = static_cast<double>(train_step + 1);
  return lr * std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
}

/// ms = ρ ms + (1 − ρ) g'²; centered: mg = ρ mg + (1 − ρ) g' and the variance ms − mg²;
/// p -= lr g' / √(variance + ε).
template <typename T>
WEIR_HOST_DEVICE void RmsPropStep(T& p, T& mean_square, T* mean_gradient, T g, T lr, T decay, T one_minus_decay, T epsilon,
                                  const RegularizedGradient<T>& regularized) {
  const T grad = regularized(g, p);
  mean_square = decay * mean_square + one_minus_decay * grad * grad;
  if (mean_gradient == nullptr) {
    p -= lr * grad / std::sqrt(mean_square + epsilon);
    return;
  }
  *mean_gradient = decay * *mean_gradient + one_minus_decay * grad;
  p -= lr * grad / std::sqrt(mean_square - *mean_gradient * *mean_gradient + epsilon);
}

/// LAMB's direction for one element: m and v as Adam's, then u = (m / c1) / √(v / c2 + ε) with the
/// bias corrections c1 = 1 − β1^t, c2 = 1 − β2^t.
template <typename T>
WEIR_HOST_DEVICE T LambDirection(T p, T& m, T& v, T g, const AdamConstants<T>& c, T correction1, T correction2,
                                 const RegularizedGradient<T>& regularized) {
  const T grad = regularized(g, p);
  m = c.beta1 * m + c.one_minus_beta1 * grad;
  v = c.beta2 * v + c.one_minus_beta2 * grad * grad;
  return (m / correction1) / std::sqrt(v / correction2 + c.epsilon);
}

/// ‖p‖ / ‖u‖ from the squared norms, 1 when either is 0.
/// OneFlow's LARS rate of one variable: lr · coefficient · ‖p‖ / (ε + ‖g'‖), from the sums of squares
/// of the variable and of its regularized gradient.
WEIR_HOST_DEVICE inline double LarsRate(double lr, double coefficient, double epsilon, double p_square_sum,
                                        double g_square_sum) {
  return lr * coefficient * std::sqrt(p_square_sum) / (epsilon + std::sqrt(g_square_sum));
}

/// One LARS step of one element: v = β·v − rate·g', p += v.
template <typename T>
WEIR_HOST_DEVICE void LarsStep(T& p, T& v, T g, T rate, T beta, const RegularizedGradient<T>& regularized) {
  v = beta * v - rate * regularized(g, p);
  p += v;
}

WEIR_HOST_DEVICE inline double LambTrustRatio(double p_square_sum, double u_square_sum) {
  const double p_norm = std::sqrt(p_square_sum);
  const double u_norm = std::sqrt(u_square_sum);
  return p_norm > 0 && u_norm > 0 ? p_norm / u_norm : 1.0;
}

}  // namespace weir::internal
