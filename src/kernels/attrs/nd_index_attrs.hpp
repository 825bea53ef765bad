#pragma once
// gather_nd and the scatter_nd family (scatter_nd, tensor_scatter_nd_update, tensor_scatter_nd_add),
// each the others' gradient, index a tensor of shape P (gather_nd's params, the scatters' output) with
// tuples: the last axis of `indices` holds K indices, and tuple n picks the slice P[i0, ..., iK-1] of
// `slice` elements (the axes of P after the K-th). The side with one slice per tuple (gather_nd's
// output, the scatters' updates) has the shape indices.shape[:-1] + P[K:]. Shared by the ops'
// definitions (graph/ops), the CPU kernels and the CUDA kernels' device code.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/tensor_meta.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct NdIndexPlan {
  static constexpr int kMaxDepth = 8;  // K: as many leading axes as one tuple may index
  int depth = 0;
  std::int64_t tuples = 0;             // indices.shape[:-1] elements
  std::int64_t slice = 1;              // elements of one slice: P[K:]
  std::int64_t dims[kMaxDepth] = {};   // P[:K]
  std::int64_t strides[kMaxDepth] = {};  // of P[:K], in slices

  /// Elements of the side with one slice per tuple.
  WEIR_HOST_DEVICE std::int64_t PerTupleElements() const { return tuples * slice; }

  /// The slice that tuple `n` picks, or -1 when one of its indices is outside its axis; `bad` is then
  /// that index's position in `indices` (the first such in the tuple).
  template <typename Index>
  WEIR_HOST_DEVICE std::int64_t SliceOf(const Index* indices, std::int64_t n, std::int64_t* bad) const {
    std::int64_t at = 0;
    for (int k = 0; k < depth; ++k) {
      const std::int64_t index = indices[n * depth + k];
      if (index < 0 || index >= dims[k]) {
        *bad = n * depth + k;
        return -1;
      }
      at += index * strides[k];
    }
    return at;
  }
};

/// scatter_nd: the output's shape P.
struct ScatterNdAttrs {
  Shape shape;
};

/// What is wrong with `indices` as tuples into a tensor of shape `indexed` (an empty string when nothing):
/// i32 or i64, at least one axis, a last axis K of at most indexed's rank (and kMaxDepth).
inline std::string NdIndicesProblem(const Shape& indexed, const TensorMeta& indices) {
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    return fmt::format("expects i32 or i64 indices, got {}", indices.dtype);
  }
  if (indices.shape.Rank() == 0) return "indices must have at least one axis (its last holds the tuples), got a scalar";
  const std::int64_t depth = indices.shape[indices.shape.Rank() - 1];
  if (depth > indexed.Rank() || depth > NdIndexPlan::kMaxDepth) {
    return fmt::format("indices {} hold tuples of {} indices, but the indexed tensor {} has {} axes{}", indices.shape,
                       depth, indexed, indexed.Rank(), depth > NdIndexPlan::kMaxDepth ? " (at most 8 are indexed)" : "");
  }
  return {};
}

/// The shape of the side with one slice per tuple: indices.shape[:-1] + indexed[K:].
inline Shape TupleSideShape(const Shape& indexed, const Shape& indices) {
  std::vector<std::int64_t> dims(indices.Dims().begin(), indices.Dims().end() - 1);
  dims.insert(dims.end(), indexed.Dims().begin() + indices[indices.Rank() - 1], indexed.Dims().end());
  return Shape(std::move(dims));
}

/// The plan of `indices` into a tensor of shape `indexed` (P). The op's inference has checked that
/// indices has at least one axis and that its last, K, is at most P's rank and kMaxDepth.
inline NdIndexPlan PlanNdIndexOf(const Shape& indexed, const Shape& indices) {
  NdIndexPlan plan;
  plan.depth = static_cast<int>(indices[indices.Rank() - 1]);
  plan.tuples = 1;
  for (int d = 0; d + 1 < indices.Rank(); ++d) plan.tuples *= indices[d];
  for (int d = plan.depth; d < indexed.Rank(); ++d) plan.slice *= indexed[d];
  std::int64_t stride = 1;
  for (int k = plan.depth - 1; k >= 0; --k) {
    plan.dims[k] = indexed[k];
    plan.strides[k] = stride;
    stride *= indexed[k];
  }
  return plan;
}

}  // namespace weir::internal
