#pragma once
// Elementwise arithmetic shared by the broadcasting binary ops and scalar, on the CPU and the GPU.
// Integer results wrap (two's complement) instead of overflowing into undefined behaviour.
#include <cstdint>
#include <type_traits>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE T ArithAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return T(a + b);  // T(): float16/bfloat16 compute in float
  }
}

template <typename T> WEIR_HOST_DEVICE T ArithSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return T(a - b);  // T(): float16/bfloat16 compute in float
  }
}

template <typename T> WEIR_HOST_DEVICE T ArithMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return T(a * b);  // T(): float16/bfloat16 compute in float
  }
}

/// a ^ exponent for integers by repeated squaring, wrapping; exponent >= 0.
template <typename T> WEIR_HOST_DEVICE T IntPow(T a, std::uint64_t exponent) {
  T result = 1;
  while (exponent != 0) {
    if ((exponent & 1) != 0) result = ArithMul(result, a);
    a = ArithMul(a, a);
    exponent >>= 1;
  }
  return result;
}

}  // namespace weir::internal
