#pragma once
// decode_random's draws as a variable initializer: the same distributions, so synthetic data is
// drawn as variables are.
#include <stdexcept>

#include <fmt/format.h>

#include "weir/initializers.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// The initializer that draws decode_random's values; throws std::invalid_argument for an unknown
/// distribution.
inline Initializer DecodeRandomInitializer(const DecodeRandomAttrs& attrs) {
  if (attrs.distribution == "uniform") return RandomUniformInitializer(attrs.minval, attrs.maxval);
  if (attrs.distribution == "normal") return RandomNormalInitializer(attrs.mean, attrs.stddev);
  if (attrs.distribution == "truncated_normal") return TruncatedNormalInitializer(attrs.mean, attrs.stddev);
  if (attrs.distribution == "constant") return ConstantInitializer(attrs.value);
  throw std::invalid_argument(fmt::format(
      "[decode_random] distribution must be 'uniform', 'normal', 'truncated_normal' or 'constant', got '{}'",
      attrs.distribution));
}

}  // namespace weir::internal
