#pragma once
// The math of unary and unary_grad, one functor per kind of weir/op_kinds.hpp with the facts about it
// that the ops and tests use, for the CPU kernels and the CUDA kernels' device code alike.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/functors/activation.hpp"
#include "kernels/functors/arithmetic.hpp"
#include "kernels/functors/host_device.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal {

// One functor per kind: Fwd(x) = f(x); Grad(v, dy) = f' · dy where v is y = f(x) when
// kGradUsesOutput (its derivative is cheapest from y: e^x, √x, ...), else x. kTakesIntegers: exact on
// i32 and i64 too. [kLow, kHigh]: where tests draw inputs from, inside the domain and away from its
// edges and poles. A kind without a specialization fails to compile (VisitUnaryKind names every kind).
template <UnaryOpKind kKind> struct UnaryFn;

struct UnaryTraits {
  static constexpr bool kGradUsesOutput = false;
  static constexpr bool kTakesIntegers = false;
  static constexpr double kLow = -2.0;
  static constexpr double kHigh = 2.0;
};
struct PositiveInputs : UnaryTraits {
  static constexpr double kLow = 0.1;
};
struct UnitIntervalInputs : UnaryTraits {  // (-1, 1)
  static constexpr double kLow = -0.9;
  static constexpr double kHigh = 0.9;
};

// 2/√π, 1/√2 and 1/√(2π): erf's derivative and the normal distribution's.
inline constexpr double kTwoOverSqrtPi = 1.1283791670955126;
inline constexpr double kSqrtHalf = 0.7071067811865476;
inline constexpr double kOneOverSqrtTwoPi = 0.3989422804014327;

template <> struct UnaryFn<UnaryOpKind::kExp> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::exp(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy * y; }
};
template <> struct UnaryFn<UnaryOpKind::kLog> : PositiveInputs {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::log(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / x; }
};
template <> struct UnaryFn<UnaryOpKind::kSqrt> : PositiveInputs {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::sqrt(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy / (T(2) * y); }
};
template <> struct UnaryFn<UnaryOpKind::kRsqrt> : PositiveInputs {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return T(1) / std::sqrt(x); }
  // d(x^-1/2) = -x^-3/2 / 2 = -y³ / 2.
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return T(-0.5) * dy * y * y * y; }
};
template <> struct UnaryFn<UnaryOpKind::kSquare> : UnaryTraits {
  static constexpr bool kTakesIntegers = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return ArithMul(x, x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return T(2) * x * dy; }
};
template <> struct UnaryFn<UnaryOpKind::kAbs> : UnaryTraits {
  static constexpr bool kTakesIntegers = true;
  // Integers wrap: |lowest| is lowest, as two's complement negation gives.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) {
    if constexpr (std::is_integral_v<T>) {
      return x < 0 ? ArithSub(T(0), x) : x;
    } else {
      return std::abs(x);
    }
  }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return x > T(0) ? dy : (x < T(0) ? -dy : T(0)); }
};
template <> struct UnaryFn<UnaryOpKind::kNegative> : UnaryTraits {
  static constexpr bool kTakesIntegers = true;
  // -x, not 0 - x: the negative of +0.0 is -0.0. Integers wrap.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) {
    if constexpr (std::is_integral_v<T>) {
      return ArithSub(T(0), x);
    } else {
      return -x;
    }
  }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T dy) { return -dy; }
};
template <> struct UnaryFn<UnaryOpKind::kReciprocal> : PositiveInputs {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return T(1) / x; }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return -dy * y * y; }
};
template <> struct UnaryFn<UnaryOpKind::kLog1p> : PositiveInputs {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::log1p(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + x); }
};
template <> struct UnaryFn<UnaryOpKind::kExpm1> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::expm1(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy * (y + T(1)); }
};
template <> struct UnaryFn<UnaryOpKind::kSoftplus> : UnaryTraits {
  // max(x, 0) + log1p(e^-|x|): no overflow for large |x|, no cancellation for very negative x.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + std::exp(-x)); }
};
template <> struct UnaryFn<UnaryOpKind::kSign> : UnaryTraits {
  static constexpr bool kTakesIntegers = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
template <> struct UnaryFn<UnaryOpKind::kFloor> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::floor(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
template <> struct UnaryFn<UnaryOpKind::kCeil> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::ceil(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
template <> struct UnaryFn<UnaryOpKind::kRound> : UnaryTraits {
  // nearbyint rounds half to even in the default rounding mode (OneFlow's round is rint).
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::nearbyint(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
template <> struct UnaryFn<UnaryOpKind::kSin> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::sin(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * std::cos(x); }
};
template <> struct UnaryFn<UnaryOpKind::kCos> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::cos(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return -dy * std::sin(x); }
};
template <> struct UnaryFn<UnaryOpKind::kTan> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  static constexpr double kLow = -1.2;  // the poles are at ±π/2
  static constexpr double kHigh = 1.2;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::tan(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy * (T(1) + y * y); }
};
template <> struct UnaryFn<UnaryOpKind::kAsin> : UnitIntervalInputs {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::asin(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / std::sqrt(T(1) - x * x); }
};
template <> struct UnaryFn<UnaryOpKind::kAcos> : UnitIntervalInputs {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::acos(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return -dy / std::sqrt(T(1) - x * x); }
};
template <> struct UnaryFn<UnaryOpKind::kAtan> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::atan(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + x * x); }
};
template <> struct UnaryFn<UnaryOpKind::kSinh> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::sinh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * std::cosh(x); }
};
template <> struct UnaryFn<UnaryOpKind::kCosh> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::cosh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * std::sinh(x); }
};
template <> struct UnaryFn<UnaryOpKind::kAsinh> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::asinh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / std::sqrt(x * x + T(1)); }
};
template <> struct UnaryFn<UnaryOpKind::kAcosh> : UnaryTraits {
  static constexpr double kLow = 1.1;  // [1, ∞)
  static constexpr double kHigh = 3.0;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::acosh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / std::sqrt(x * x - T(1)); }
};
template <> struct UnaryFn<UnaryOpKind::kAtanh> : UnitIntervalInputs {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::atanh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) - x * x); }
};
template <> struct UnaryFn<UnaryOpKind::kErf> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::erf(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * T(kTwoOverSqrtPi) * std::exp(-x * x); }
};
template <> struct UnaryFn<UnaryOpKind::kErfc> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::erfc(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return -dy * T(kTwoOverSqrtPi) * std::exp(-x * x); }
};
// ln |Γ(x)|, thread-safe on the host: glibc's lgamma writes the global signgam, lgamma_r does not.
template <typename T> WEIR_HOST_DEVICE T LogGamma(T x) {
#if defined(__CUDA_ARCH__)
  return lgamma(x);
#else
  int sign = 0;
  if constexpr (std::is_same_v<T, float>) {
    return ::lgammaf_r(x, &sign);
  } else {
    return ::lgamma_r(x, &sign);
  }
#endif
}

// ψ(x) = d ln Γ(x) / dx, in double: reflected to x > 0 (ψ(x) = ψ(1 - x) - π / tan(πx)), moved up to
// x >= 6 by ψ(x) = ψ(x + 1) - 1/x, then the asymptotic series to x^-10 (error below 1e-11 there). NaN
// at the poles 0, -1, -2, ...
template <typename T> WEIR_HOST_DEVICE T Digamma(T x_in) {
  constexpr double kPi = 3.14159265358979323846;
  double x = static_cast<double>(x_in);
  if (x <= 0 && x == std::floor(x)) return T(NAN);
  double result = 0;
  if (x < 0) {
    result = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  for (; x < 6; x += 1) result -= 1 / x;
  const double r2 = 1 / (x * x);
  result += std::log(x) - 0.5 / x - r2 * (1.0 / 12 - r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 / 132))));
  return static_cast<T>(result);
}

template <> struct UnaryFn<UnaryOpKind::kLgamma> : PositiveInputs {
  static constexpr double kHigh = 4.0;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return LogGamma(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * Digamma(x); }
};
template <> struct UnaryFn<UnaryOpKind::kLogSigmoid> : UnaryTraits {
  // log σ(x) = -softplus(-x) = min(x, 0) - log1p(e^-|x|): finite for large |x|.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::min(x, T(0)) - std::log1p(std::exp(-std::abs(x))); }
  // d log σ(x) = σ(-x) = 1 / (1 + e^x).
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + std::exp(x)); }
};
template <> struct UnaryFn<UnaryOpKind::kGelu> : UnaryTraits {
  // x·Φ(x) with the exact normal CDF (OneFlow's gelu, not the tanh form), Φ(x) = erfc(-x/√2) / 2:
  // the same as (1 + erf(x/√2)) / 2 without its cancellation for negative x.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return T(0.5) * x * std::erfc(-x * T(kSqrtHalf)); }
  // Φ(x) + x·φ(x), φ the normal density.
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) {
    return dy * (T(0.5) * std::erfc(-x * T(kSqrtHalf)) + x * T(kOneOverSqrtTwoPi) * std::exp(T(-0.5) * x * x));
  }
};
template <> struct UnaryFn<UnaryOpKind::kReciprocalNoNan> : PositiveInputs {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return x == T(0) ? T(0) : T(1) / x; }
  // -dy·y², which is 0 where x was 0.
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return -dy * y * y; }
};
// The activations, from kernels/functors/activation.hpp (which the fused matmul and conv2d epilogues
// also use); their gradients read the output y.
template <> struct UnaryFn<UnaryOpKind::kRelu> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return ReluFn::Fwd(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return ReluFn::Grad(dy, y); }
};
template <> struct UnaryFn<UnaryOpKind::kSigmoid> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return SigmoidFn::Fwd(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return SigmoidFn::Grad(dy, y); }
};
template <> struct UnaryFn<UnaryOpKind::kTanh> : UnaryTraits {
  static constexpr bool kGradUsesOutput = true;
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return TanhFn::Fwd(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return TanhFn::Grad(dy, y); }
};

// OneFlow's hard activations, each one rounding from x (a composite would round at every step);
// their gradients pass strictly inside (-3, 3) (and above 3 for hardswish), as OneFlow's.
template <> struct UnaryFn<UnaryOpKind::kHardsigmoid> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) {
    return x <= T(-3) ? T(0) : (x >= T(3) ? T(1) : x / T(6) + T(0.5));
  }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return x > T(-3) && x < T(3) ? dy / T(6) : T(0); }
};
template <> struct UnaryFn<UnaryOpKind::kHardswish> : UnaryTraits {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) {
    return x <= T(-3) ? T(0) : (x >= T(3) ? x : x * (x + T(3)) / T(6));
  }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) {
    return x <= T(-3) ? T(0) : (x >= T(3) ? dy : dy * (x / T(3) + T(0.5)));
  }
};

/// Calls `visit.template operator()<Fn>()` with the functor of `kind` (host code).
template <typename Visit> auto VisitUnaryKind(UnaryOpKind kind, Visit&& visit) {
  switch (kind) {
#define WEIR_UNARY_CASE(kind_, name) \
  case UnaryOpKind::kind_: return visit.template operator()<UnaryFn<UnaryOpKind::kind_>>();
    WEIR_UNARY_OP_KINDS(WEIR_UNARY_CASE)
#undef WEIR_UNARY_CASE
  }
  throw std::invalid_argument("[unary] unknown kind");
}

}  // namespace weir::internal
