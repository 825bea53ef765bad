#pragma once
// The sizes of a batch_matmul, read from its operands' shapes: the CPU and CUDA kernels' one view of it.
#include <cstdint>

#include "common/tensor_meta.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// batches products of op(a) (m x k) and op(b) (k x n), the batch axes being all but the last two.
struct BatchProduct {
  std::int64_t batches = 1, m = 0, n = 0, k = 0;
};

inline BatchProduct BatchProductOf(const Shape& a, const Shape& b, const MatMulAttrs& attrs) {
  const int rank = a.Rank();
  BatchProduct product;
  for (int d = 0; d + 2 < rank; ++d) product.batches *= a[d];
  product.m = attrs.transpose_a ? a[rank - 1] : a[rank - 2];
  product.k = attrs.transpose_a ? a[rank - 2] : a[rank - 1];
  product.n = attrs.transpose_b ? b[rank - 2] : b[rank - 1];
  return product;
}

}  // namespace weir::internal
