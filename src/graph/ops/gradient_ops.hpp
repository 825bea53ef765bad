#pragma once
// The backward ops that gradient rules build, each defined in its own file in graph/ops/ (with
// its kernels in kernels/cpu/ under the same name). They need no gradients themselves.
#include <vector>

#include "graph/op_registry.hpp"
#include "weir/job.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// softmax_grad: y · (dy − sum(dy · y along axis)) for y = softmax(x, axis).
Blob SoftmaxGrad(const Blob& dy, const Blob& y, int axis);
/// scalar_grad: d(x (op) s)/dx · dy for every ScalarOpKind, in one pass.
Blob ScalarGrad(const Blob& dy, const Blob& x, const ScalarAttrs& attrs);
/// sparse_softmax_cross_entropy_grad: (softmax(logits) − onehot(labels)) · dy per row; the
/// softmax is recomputed, not stored.
Blob SparseSoftmaxCrossEntropyGrad(const Blob& labels, const Blob& logits, const Blob& dy);
// Shapes are taken by value: Blob::GetShape() refers into the job's value list, which adding an
// op may reallocate.
/// x broadcast (numpy rules) to `shape`; x itself when the shapes match, a reshape when only 1s differ.
Blob BroadcastTo(const Blob& x, Shape shape);
/// x summed down to `shape` (which broadcasts to x's shape); x itself or a reshape where no sum is needed.
Blob ReduceSumTo(const Blob& x, Shape shape);

/// Inference shared by the elementwise backward ops (dy, y): equal floating metas; dx is like dy.
inline std::vector<TensorMeta> InferElementwiseGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& y = ctx.inputs[1];
  if (!IsFloating(dy.dtype)) throw OpError(ctx.op_type, "expects floating inputs, got {}", dy.dtype);
  if (dy != y) throw OpError(ctx.op_type, "dy {} does not match y {}", dy.ToString(), y.ToString());
  return {dy};
}

/// True if `from` broadcasts to `to` under numpy rules (right-aligned, each dim equal or 1).
inline bool BroadcastsTo(const Shape& from, const Shape& to) {
  if (from.Rank() > to.Rank()) return false;
  const int offset = to.Rank() - from.Rank();
  for (int i = 0; i < from.Rank(); ++i) {
    if (from[i] != 1 && from[i] != to[offset + i]) return false;
  }
  return true;
}

}  // namespace weir::internal
