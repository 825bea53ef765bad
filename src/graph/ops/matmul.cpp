// matmul: out (m,n) = alpha * op(a) (m,k) · op(b) (k,n), op = optional transpose.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/product_gradient.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferMatMul(const InferContext& ctx) {
  const auto& attrs = ctx.Get<MatMulAttrs>();
  const TensorMeta& a = ctx.inputs[0];
  const TensorMeta& b = ctx.inputs[1];
  if (a.shape.Rank() != 2 || b.shape.Rank() != 2) {
    throw OpError(ctx.op_type, "expects 2-D inputs, got {} and {}", a.shape, b.shape);
  }
  if (a.dtype != b.dtype) throw OpError(ctx.op_type, "dtypes differ: {} vs {}", a.dtype, b.dtype);
  if (!IsFloating(a.dtype)) throw OpError(ctx.op_type, "expects floating inputs, got {}", a.dtype);
  const std::int64_t m = attrs.transpose_a ? a.shape[1] : a.shape[0];
  const std::int64_t k_a = attrs.transpose_a ? a.shape[0] : a.shape[1];
  const std::int64_t k_b = attrs.transpose_b ? b.shape[1] : b.shape[0];
  const std::int64_t n = attrs.transpose_b ? b.shape[0] : b.shape[1];
  if (k_a != k_b) {
    throw OpError(ctx.op_type, "inner dims differ: {}{} vs {}{}", a.shape, attrs.transpose_a ? "^T" : "", b.shape,
                  attrs.transpose_b ? "^T" : "");
  }
  return {{Shape{m, n}, a.dtype}};
}

std::vector<Blob> MatMulGradient(const GradContext& ctx) {
  return ProductGradient(ctx, [](const Blob& x, const Blob& y, MatMulAttrs attrs) { return MatMul(x, y, attrs); });
}

// OneFlow's three matmul signatures (sbp_parallel.proto): rows of a split (data parallel), columns
// of b split (model parallel), the inner dimension split (partial sums); and linearity in each operand.
std::vector<SbpSignature> MatMulSbp(const SbpContext& ctx) {
  const auto& attrs = ctx.Get<MatMulAttrs>();
  const int a_rows = attrs.transpose_a ? 1 : 0;
  const int b_columns = attrs.transpose_b ? 0 : 1;
  return {{{Sbp::S(a_rows), Sbp::B()}, {Sbp::S(0)}},
          {{Sbp::B(), Sbp::S(b_columns)}, {Sbp::S(1)}},
          {{Sbp::S(1 - a_rows), Sbp::S(1 - b_columns)}, {Sbp::P()}},
          {{Sbp::P(), Sbp::B()}, {Sbp::P()}},
          {{Sbp::B(), Sbp::P()}, {Sbp::P()}}};
}

WEIR_REGISTER_OP({.type = "matmul",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferMatMul,
                  .gradient = MatMulGradient,
                  .sbp = MatMulSbp,
                  .read_attrs = ProductAttrsReader()});

}  // namespace
}  // namespace internal

Blob MatMul(const Blob& a, const Blob& b, MatMulAttrs attrs, std::string_view name) {
  return internal::AddOp1("matmul", {a, b}, attrs, name);
}

}  // namespace weir
