#pragma once
// The conversion of cast, for the CPU kernel and the CUDA kernel's device code alike. Float to
// integer saturates and maps NaN to 0 (a plain out-of-range conversion is undefined); integer
// narrowing wraps; anything to bool is value != 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/functors/host_device.hpp"
#include "weir/half.hpp"

namespace weir::internal {

/// float16 and bfloat16 count as floating (they convert through float).
template <typename T>
inline constexpr bool kIsFloatingValue = std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <typename Out, typename In> WEIR_HOST_DEVICE Out Convert(In value) {
  if constexpr (std::is_same_v<Out, bool>) {
    return value != In(0);
  } else if constexpr (kIsFloatingValue<In> && std::is_integral_v<Out>) {
    // min is 0 or -2^k and max + 1 is 2^k, all exact as doubles.
    constexpr double kLow = static_cast<double>(std::numeric_limits<Out>::min());
    constexpr double kHigh = static_cast<double>(std::numeric_limits<Out>::max()) + 1.0;
    const double v = static_cast<double>(value);
    if (std::isnan(v)) return Out(0);
    if (v <= kLow) return std::numeric_limits<Out>::min();
    if (v >= kHigh) return std::numeric_limits<Out>::max();
    return static_cast<Out>(v);
  } else {
    return static_cast<Out>(value);
  }
}

}  // namespace weir::internal
