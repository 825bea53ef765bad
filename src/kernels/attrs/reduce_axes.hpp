#pragma once
// Which axes of x a reduction reduces, a flag per axis, and the merged-axes plan of the walk
// (kernels/functors/reduce.hpp) over them: what the reduction kernels (sums, means, extrema, their
// gradients) set up from their attributes and shapes.
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/tensor_meta.hpp"
#include "kernels/functors/reduce.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// reduce_sum, reduce_mean, reduce_max, reduce_min: the listed axes (negative from the end), or all.
inline std::vector<bool> ReducedAxesOf(const Shape& x, const ReduceAttrs& attrs) {
  const int rank = x.Rank();
  std::vector<bool> reduced(static_cast<std::size_t>(rank), attrs.axes.empty());
  for (int axis : attrs.axes) reduced[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = true;
  return reduced;
}

/// reduce_sum_to: summing x down to `target` (which broadcasts to x) reduces the leading axes and
/// those where the target has a 1.
inline std::vector<bool> SummedAxesOf(const Shape& x, const Shape& target) {
  std::vector<bool> reduced(static_cast<std::size_t>(x.Rank()), false);
  const int offset = x.Rank() - target.Rank();
  for (int i = 0; i < x.Rank(); ++i) reduced[static_cast<std::size_t>(i)] = i < offset || (target[i - offset] == 1 && x[i] != 1);
  return reduced;
}

/// The plan of reducing x's `reduced` axes; throws naming the op when the axes that do not merge are
/// more than a plan holds.
inline ReductionPlan ReductionPlanOf(const Shape& x, const std::vector<bool>& reduced, std::string_view op_type,
                                     std::string_view op_name) {
  ReductionPlan plan;
  if (!PlanReduction(x.Dims(), reduced, plan)) {
    throw std::invalid_argument(fmt::format("[{}] '{}': {} has more than {} axes that do not merge", op_type, op_name, x,
                                            ReductionPlan::kMaxRank));
  }
  return plan;
}

}  // namespace weir::internal
