#pragma once
// Typed attributes of dropout and dropout_grad, shared by their definitions (graph/ops) and kernels.
#include <cstdint>

namespace weir::internal {

struct DropoutAttrs {
  /// Probability of zeroing an element; kept ones are scaled by 1 / (1 - rate).
  double rate = 0.5;
  /// The mask's random stream: the same seed gives the same masks, call after call.
  std::uint64_t seed = 0;
};

}  // namespace weir::internal
