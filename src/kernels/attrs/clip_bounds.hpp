#pragma once
// clip_by_value's bounds, for its CPU and CUDA kernels.
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "weir/op_attrs.hpp"

namespace weir::internal {

/// The bounds of clip_by_value in x's dtype: a missing bound is unbounded; integer bounds are the
/// float bounds rounded inwards, saturated to the dtype.
template <typename T> std::pair<T, T> ClipBounds(const ClipAttrs& attrs) {
  using Limits = std::numeric_limits<T>;
  if constexpr (std::is_floating_point_v<T>) {
    return {attrs.min ? static_cast<T>(*attrs.min) : -Limits::infinity(),
            attrs.max ? static_cast<T>(*attrs.max) : Limits::infinity()};
  } else {
    const auto saturate = [](double v) {
      if (v <= static_cast<double>(Limits::lowest())) return Limits::lowest();
      if (v >= static_cast<double>(Limits::max())) return Limits::max();
      return static_cast<T>(v);
    };
    return {attrs.min ? saturate(std::ceil(*attrs.min)) : Limits::lowest(),
            attrs.max ? saturate(std::floor(*attrs.max)) : Limits::max()};
  }
}

}  // namespace weir::internal
