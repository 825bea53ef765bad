#pragma once
// The gradient rule that matmul and batch_matmul share: y = alpha·op(a)·op(b) gives
// dop(a) = alpha·dy·op(b)^T and dop(b) = alpha·op(a)^T·dy, each written as one product of the stored
// a, b and dy (per batch index for batch_matmul) with the transposes folded into the flags.
#include <vector>

#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// `product(x, y, attrs)` builds the op whose gradient this is (MatMul or BatchMatMul).
template <typename Product> std::vector<Blob> ProductGradient(const GradContext& ctx, Product product) {
  const auto& attrs = ctx.Get<MatMulAttrs>();
  const Blob& a = ctx.inputs[0];
  const Blob& b = ctx.inputs[1];
  const Blob& dy = ctx.output_grads[0];
  const double alpha = attrs.alpha;
  Blob da, db;
  if (ctx.needs_grad[0]) {
    da = attrs.transpose_a
             ? product(b, dy, MatMulAttrs{.transpose_a = attrs.transpose_b, .transpose_b = true, .alpha = alpha})  // (k,m)
             : product(dy, b, MatMulAttrs{.transpose_a = false, .transpose_b = !attrs.transpose_b, .alpha = alpha});  // (m,k)
  }
  if (ctx.needs_grad[1]) {
    db = attrs.transpose_b
             ? product(dy, a, MatMulAttrs{.transpose_a = true, .transpose_b = attrs.transpose_a, .alpha = alpha})  // (n,k)
             : product(a, dy, MatMulAttrs{.transpose_a = !attrs.transpose_a, .transpose_b = false, .alpha = alpha});  // (k,n)
  }
  return {da, db};
}

/// The attributes both read by name.
inline AttrsReader ProductAttrsReader() {
  return ReadAttrs<MatMulAttrs>(Attr("transpose_a", &MatMulAttrs::transpose_a), Attr("transpose_b", &MatMulAttrs::transpose_b),
                                Attr("alpha", &MatMulAttrs::alpha));
}

}  // namespace weir::internal
