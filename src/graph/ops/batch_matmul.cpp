// batch_matmul: for every index of the leading (batch) axes, out[..., m, n] = alpha * op(a) · op(b),
// op = optional transpose of the last two axes (OneFlow's batch_matmul, which flow.matmul runs for
// operands of rank > 2). a and b have the same rank and the same batch axes.
#include <algorithm>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/product_gradient.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBatchMatMul(const InferContext& ctx) {
  const auto& attrs = ctx.Get<MatMulAttrs>();
  const TensorMeta& a = ctx.inputs[0];
  const TensorMeta& b = ctx.inputs[1];
  const int rank = a.shape.Rank();
  if (rank < 3 || b.shape.Rank() != rank) {
    throw OpError(ctx.op_type, "expects a and b of one rank >= 3, got {} and {}", a.shape, b.shape);
  }
  if (a.dtype != b.dtype) throw OpError(ctx.op_type, "dtypes differ: {} vs {}", a.dtype, b.dtype);
  if (!IsFloating(a.dtype)) throw OpError(ctx.op_type, "expects floating inputs, got {}", a.dtype);
  std::vector<std::int64_t> dims(a.shape.Dims().begin(), a.shape.Dims().end() - 2);
  if (!std::equal(dims.begin(), dims.end(), b.shape.Dims().begin())) {
    throw OpError(ctx.op_type, "batch axes differ: {} vs {}", a.shape, b.shape);
  }
  const std::int64_t m = attrs.transpose_a ? a.shape[rank - 1] : a.shape[rank - 2];
  const std::int64_t k_a = attrs.transpose_a ? a.shape[rank - 2] : a.shape[rank - 1];
  const std::int64_t k_b = attrs.transpose_b ? b.shape[rank - 1] : b.shape[rank - 2];
  const std::int64_t n = attrs.transpose_b ? b.shape[rank - 2] : b.shape[rank - 1];
  if (k_a != k_b) {
    throw OpError(ctx.op_type, "inner dims differ: {}{} vs {}{}", a.shape, attrs.transpose_a ? "^T" : "", b.shape,
                  attrs.transpose_b ? "^T" : "");
  }
  dims.push_back(m);
  dims.push_back(n);
  return {{Shape(std::move(dims)), a.dtype}};
}

std::vector<Blob> BatchMatMulGradient(const GradContext& ctx) {
  return ProductGradient(ctx, [](const Blob& x, const Blob& y, MatMulAttrs attrs) { return BatchMatMul(x, y, attrs); });
}

// Every batch axis splits a, b and the output alike; the product is linear in each operand.
std::vector<SbpSignature> BatchMatMulSbp(const SbpContext& ctx) {
  std::vector<SbpSignature> signatures;
  for (int d = 0; d + 2 < ctx.inputs[0].shape.Rank(); ++d) signatures.push_back({{Sbp::S(d), Sbp::S(d)}, {Sbp::S(d)}});
  signatures.push_back({{Sbp::P(), Sbp::B()}, {Sbp::P()}});
  signatures.push_back({{Sbp::B(), Sbp::P()}, {Sbp::P()}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "batch_matmul",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBatchMatMul,
                  .gradient = BatchMatMulGradient,
                  .sbp = BatchMatMulSbp,
                  .read_attrs = ProductAttrsReader()});

}  // namespace
}  // namespace internal

Blob BatchMatMul(const Blob& a, const Blob& b, MatMulAttrs attrs, std::string_view name) {
  return internal::AddOp1("batch_matmul", {a, b}, attrs, name);
}

}  // namespace weir
