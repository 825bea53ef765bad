#include "common/split.hpp"

#include <vector>

namespace weir::internal {

Shape SplitShape(const Shape& logical, int axis, int ranks, int rank) {
  std::vector<std::int64_t> dims = logical.Dims();
  const std::int64_t extent = dims.at(static_cast<std::size_t>(axis));
  dims[static_cast<std::size_t>(axis)] = SplitBegin(extent, ranks, rank + 1) - SplitBegin(extent, ranks, rank);
  return Shape(dims);
}

}  // namespace weir::internal
