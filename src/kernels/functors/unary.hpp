#pragma once
// The math of unary and unary_grad, one functor per kind, for the CPU kernels and the CUDA kernels'
// device code alike.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/functors/arithmetic.hpp"
#include "kernels/functors/host_device.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal {

// Fwd(x) = f(x); Grad(v, dy) = f' · dy where v is y for the kinds in UnaryGradUsesOutput, else x.
struct ExpFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::exp(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy * y; }
};
struct LogFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::log(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / x; }
};
struct SqrtFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::sqrt(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy / (T(2) * y); }
};
struct RsqrtFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return T(1) / std::sqrt(x); }
  // d(x^-1/2) = -x^-3/2 / 2 = -y³ / 2.
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return T(-0.5) * dy * y * y * y; }
};
struct SquareFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return ArithMul(x, x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return T(2) * x * dy; }
};
struct AbsFn {
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
struct NegativeFn {
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
struct ReciprocalFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return T(1) / x; }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return -dy * y * y; }
};
struct Log1pFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::log1p(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + x); }
};
struct Expm1Fn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::expm1(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T y, T dy) { return dy * (y + T(1)); }
};
struct SoftplusFn {
  // max(x, 0) + log1p(e^-|x|): no overflow for large |x|, no cancellation for very negative x.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy / (T(1) + std::exp(-x)); }
};
struct SignFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
struct FloorFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::floor(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
struct CeilFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::ceil(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
struct RoundFn {
  // nearbyint rounds half to even in the default rounding mode (OneFlow's round is rint).
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::nearbyint(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T, T) { return T(0); }
};
struct SinFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::sin(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return dy * std::cos(x); }
};
struct CosFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::cos(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T x, T dy) { return -dy * std::sin(x); }
};

/// Calls `visit.template operator()<Fn>()` with the functor of `kind` (host code).
template <typename Visit> auto VisitUnaryKind(UnaryOpKind kind, Visit&& visit) {
  switch (kind) {
    case UnaryOpKind::kExp: return visit.template operator()<ExpFn>();
    case UnaryOpKind::kLog: return visit.template operator()<LogFn>();
    case UnaryOpKind::kSqrt: return visit.template operator()<SqrtFn>();
    case UnaryOpKind::kRsqrt: return visit.template operator()<RsqrtFn>();
    case UnaryOpKind::kSquare: return visit.template operator()<SquareFn>();
    case UnaryOpKind::kAbs: return visit.template operator()<AbsFn>();
    case UnaryOpKind::kNegative: return visit.template operator()<NegativeFn>();
    case UnaryOpKind::kReciprocal: return visit.template operator()<ReciprocalFn>();
    case UnaryOpKind::kLog1p: return visit.template operator()<Log1pFn>();
    case UnaryOpKind::kExpm1: return visit.template operator()<Expm1Fn>();
    case UnaryOpKind::kSoftplus: return visit.template operator()<SoftplusFn>();
    case UnaryOpKind::kSign: return visit.template operator()<SignFn>();
    case UnaryOpKind::kFloor: return visit.template operator()<FloorFn>();
    case UnaryOpKind::kCeil: return visit.template operator()<CeilFn>();
    case UnaryOpKind::kRound: return visit.template operator()<RoundFn>();
    case UnaryOpKind::kSin: return visit.template operator()<SinFn>();
    case UnaryOpKind::kCos: return visit.template operator()<CosFn>();
  }
  throw std::invalid_argument("[unary] unknown kind");
}

}  // namespace weir::internal
