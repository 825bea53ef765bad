#pragma once
// Elementwise arithmetic shared by the broadcasting binary ops and scalar. Integer results wrap
// (two's complement) instead of overflowing into undefined behaviour, and integer division by
// zero fails the call with a KernelError instead of killing the process with SIGFPE.
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/kernel.hpp"

namespace weir::internal {

template <typename T> T ArithAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T> T ArithSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <typename T> T ArithMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

/// a / b; integers truncate toward zero (C++ semantics, as TensorFlow's truncatediv).
template <typename T> T ArithDiv(T a, T b, std::string_view op_type) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw KernelError(fmt::format("[{}] integer division by zero", op_type));
    // min / -1 overflows (and traps on x86); negation wraps it to min, as the other ops do.
    if (b == -1) return ArithSub(T(0), a);
    return a / b;
  } else {
    return a / b;
  }
}

/// a ^ exponent for integers by repeated squaring, wrapping; exponent >= 0.
template <typename T> T IntPow(T a, std::uint64_t exponent) {
  T result = 1;
  while (exponent != 0) {
    if ((exponent & 1) != 0) result = ArithMul(result, a);
    a = ArithMul(a, a);
    exponent >>= 1;
  }
  return result;
}

}  // namespace weir::internal
