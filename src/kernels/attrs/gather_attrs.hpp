#pragma once
// Typed attributes of gather and unsorted_segment_sum, shared by their definitions (graph/ops) and
// their kernels, and the plan of their loops (kernels/functors/gather.hpp) from the tensors' shapes.
#include <cstdint>

#include "common/tensor_meta.hpp"
#include "kernels/functors/gather.hpp"

namespace weir::internal {

/// gather: params (..., axis_size, ...) and indices I -> params[:axis] + I + params[axis+1:].
struct GatherAttrs {
  int axis = 0;  // negative: from the end
};

/// unsorted_segment_sum: data (..., I, ...) with I at `axis`, segment ids I -> (..., num_segments, ...),
/// each data entry added into its id's segment.
struct UnsortedSegmentSumAttrs {
  int axis = 0;  // where the ids' axes start in data; negative: from the end
  std::int64_t num_segments = 0;
};

/// The loops of a gather of `params` by `indices` along `axis`.
inline GatherPlan PlanGatherOf(const Shape& params, const Shape& indices, int axis) {
  if (axis < 0) axis += params.Rank();
  GatherPlan plan;
  for (int d = 0; d < axis; ++d) plan.outer *= params[d];
  plan.axis_size = params[axis];
  plan.count = indices.NumElements();
  for (int d = axis + 1; d < params.Rank(); ++d) plan.inner *= params[d];
  return plan;
}

/// The loops of a segment sum of `data` by `ids` (whose axes start at `axis` in data).
inline GatherPlan PlanSegmentSumOf(const Shape& data, const Shape& ids, const UnsortedSegmentSumAttrs& attrs) {
  const int axis = attrs.axis < 0 ? attrs.axis + data.Rank() : attrs.axis;
  GatherPlan plan;
  for (int d = 0; d < axis; ++d) plan.outer *= data[d];
  plan.axis_size = attrs.num_segments;
  plan.count = ids.NumElements();
  for (int d = axis + ids.Rank(); d < data.Rank(); ++d) plan.inner *= data[d];
  return plan;
}

}  // namespace weir::internal
