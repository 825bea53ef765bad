// flatten (OneFlow's flow.flatten): a reshape that merges axes start_dim..end_dim into one, so it
// needs no kernel of its own and its gradient is reshape's.
#include <algorithm>

#include <fmt/format.h>

#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

Blob Flatten(const Blob& x, FlattenAttrs attrs, std::string_view name) {
  if (!x.Defined()) throw std::invalid_argument("[flatten] input 'x' is an undefined blob");
  const Shape shape = x.GetShape();
  const int rank = std::max(shape.Rank(), 1);  // a 0-D x flattens as (1)
  const auto resolve = [&](int dim, std::string_view what) {
    const int resolved = dim < 0 ? dim + rank : dim;
    if (resolved < 0 || resolved >= rank) {
      throw std::invalid_argument(
          fmt::format("[flatten] {} must be in [{}, {}) for x {}, got {}", what, -rank, rank, shape, dim));
    }
    return resolved;
  };
  const int start = resolve(attrs.start_dim, "start_dim");
  const int end = resolve(attrs.end_dim, "end_dim");
  if (start > end) {
    throw std::invalid_argument(fmt::format("[flatten] start_dim {} (axis {}) comes after end_dim {} (axis {}) for x {}",
                                            attrs.start_dim, start, attrs.end_dim, end, shape));
  }
  std::vector<std::int64_t> dims;
  std::int64_t merged = 1;
  for (int i = 0; i < rank; ++i) {
    const std::int64_t dim = shape.Rank() == 0 ? 1 : shape[i];
    if (i < start || i > end) {
      dims.push_back(dim);
    } else {
      merged *= dim;
      if (i == end) dims.push_back(merged);
    }
  }
  return Reshape(x, {.shape = std::move(dims)}, name);
}

}  // namespace weir
