#pragma once
// How a logical extent splits over ranks (OneFlow's balanced split): the SBP rules, the planner and the
// collective kernels all cut pieces this way.
#include <algorithm>
#include <cstdint>

#include "common/tensor_meta.hpp"

namespace weir::internal {

/// Where piece `rank` of `extent` elements split `ranks` ways begins: as evenly as possible, the
/// first `extent % ranks` pieces one element longer.
inline std::int64_t SplitBegin(std::int64_t extent, int ranks, int rank) {
  const std::int64_t base = extent / ranks;
  const std::int64_t longer = extent % ranks;
  return base * rank + std::min<std::int64_t>(rank, longer);
}

/// The shape of piece `rank` of `logical` split `ranks` ways along `axis`.
Shape SplitShape(const Shape& logical, int axis, int ranks, int rank);

}  // namespace weir::internal
