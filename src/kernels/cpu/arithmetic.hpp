#pragma once
// Elementwise arithmetic shared by the broadcasting binary ops and scalar on the CPU: the wrapping
// add, sub, mul and pow of kernels/functors/arithmetic.hpp (the GPU's too), and division, where an
// integer division by zero fails the call with a KernelError instead of killing the process with SIGFPE.
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/functors/arithmetic.hpp"
#include "kernels/functors/binary.hpp"
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

/// a mod b with the divisor's sign (floor modulo, Python's %); an integer b of 0 fails the call.
template <typename T> T ArithFloorMod(T a, T b, std::string_view op_type) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw KernelError(fmt::format("[{}] integer modulo by zero", op_type));
    if (b == -1) return T(0);  // min % -1 overflows (and traps on x86)
    const T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    return FloatFloorModOp::Apply(a, b);
  }
}

}  // namespace weir::internal
