#pragma once
// The math of scalar (x op s), for the CPU kernel and the CUDA kernel's device code alike. Integer
// division is the CPU's: it must fail the call on a zero divisor.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/functors/arithmetic.hpp"
#include "kernels/functors/host_device.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal {

/// x (kind) s for every kind but integer kDiv and kRDiv.
template <typename T> WEIR_HOST_DEVICE T ApplyScalar(ScalarOpKind kind, T x, T s) {
  switch (kind) {
    case ScalarOpKind::kAdd: return ArithAdd(x, s);
    case ScalarOpKind::kSub: return ArithSub(x, s);
    case ScalarOpKind::kRSub: return ArithSub(s, x);
    case ScalarOpKind::kMul: return ArithMul(x, s);
    case ScalarOpKind::kDiv: return x / s;
    case ScalarOpKind::kRDiv: return s / x;
    case ScalarOpKind::kPow:
      if constexpr (std::is_integral_v<T>) {
        return IntPow(x, static_cast<std::uint64_t>(s));
      } else {
        return std::pow(x, s);
      }
  }
  return x;
}

/// dx of x (kind) s for dy: 1, −1, s, 1/s, −s/x², s x^(s−1) (0 for s = 0, where 0·x^−1 would be NaN).
template <typename T> WEIR_HOST_DEVICE T ScalarGrad(ScalarOpKind kind, T dy, T x, T s) {
  switch (kind) {
    case ScalarOpKind::kAdd:
    case ScalarOpKind::kSub: return dy;
    case ScalarOpKind::kRSub: return -dy;
    case ScalarOpKind::kMul: return dy * s;
    case ScalarOpKind::kDiv: return dy / s;
    case ScalarOpKind::kRDiv: return -dy * s / (x * x);
    case ScalarOpKind::kPow:
      if (s == T(0)) return T(0);
      if (s == T(2)) return dy * T(2) * x;
      return dy * s * std::pow(x, s - T(1));
  }
  return dy;
}

}  // namespace weir::internal
