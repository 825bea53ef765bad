#pragma once
// Elementwise arithmetic shared by the broadcasting binary ops and scalar on the CPU: the wrapping
// add, sub, mul and pow of kernels/functors/arithmetic.hpp (the GPU's too), and division, where an
// integer division by zero fails the call with a KernelError instead of killing the process with SIGFPE.
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/functors/arithmetic.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

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

}  // namespace weir::internal
