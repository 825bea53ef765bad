// add, sub, mul, div: elementwise with numpy broadcasting; both inputs share one numeric dtype.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBroadcastBinary(const InferContext& ctx) {
  const TensorMeta& a = ctx.inputs[0];
  const TensorMeta& b = ctx.inputs[1];
  if (a.dtype != b.dtype) throw OpError(ctx.op_type, "dtypes differ: {} vs {}", a.dtype, b.dtype);
  if (a.dtype != DType::kF32 && a.dtype != DType::kF64 && a.dtype != DType::kI32 && a.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects f32, f64, i32 or i64 inputs, got {}", a.dtype);
  }
  return {{BroadcastShapes(ctx.op_type, a.shape, b.shape), a.dtype}};
}

WEIR_REGISTER_OP({.type = "add", .num_inputs = 2, .input_names = {"a", "b"}, .infer = InferBroadcastBinary});
WEIR_REGISTER_OP({.type = "sub", .num_inputs = 2, .input_names = {"a", "b"}, .infer = InferBroadcastBinary});
WEIR_REGISTER_OP({.type = "mul", .num_inputs = 2, .input_names = {"a", "b"}, .infer = InferBroadcastBinary});
WEIR_REGISTER_OP({.type = "div", .num_inputs = 2, .input_names = {"a", "b"}, .infer = InferBroadcastBinary});

}  // namespace
}  // namespace internal

Blob Add(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("add", {a, b}, std::any{}, name); }
Blob Sub(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("sub", {a, b}, std::any{}, name); }
Blob Mul(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("mul", {a, b}, std::any{}, name); }
Blob Div(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("div", {a, b}, std::any{}, name); }

}  // namespace weir
