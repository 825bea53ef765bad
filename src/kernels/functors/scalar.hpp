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

}  // namespace weir::internal
