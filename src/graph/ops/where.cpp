// where: condition ? x : y elementwise, the three numpy-broadcast to one shape (OneFlow's flow.where
// with x and y given). The condition is an integer or bool tensor (nonzero: take x); x and y share a
// dtype, which the output has. The gradient goes to x where the condition holds and to y elsewhere,
// summed back to their shapes where they were broadcast.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferWhere(const InferContext& ctx) {
  const TensorMeta& condition = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  const TensorMeta& y = ctx.inputs[2];
  if (condition.dtype != DType::kI8 && condition.dtype != DType::kU8 && condition.dtype != DType::kBool &&
      condition.dtype != DType::kI32 && condition.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects an i8, u8, bool, i32 or i64 condition, got {}", condition.dtype);
  }
  if (x.dtype != y.dtype) throw OpError(ctx.op_type, "x and y dtypes differ: {} vs {}", x.dtype, y.dtype);
  return {{BroadcastShapes(ctx.op_type, BroadcastShapes(ctx.op_type, condition.shape, x.shape), y.shape), x.dtype}};
}

std::vector<Blob> WhereGradient(const GradContext& ctx) {
  const Blob& condition = ctx.inputs[0];
  const Blob& dy = ctx.output_grads[0];
  const Blob zero = AddConstant(dy.Graph(), Tensor(Shape{}, dy.GetDType()), {});
  Blob dx, dy_of_y;
  if (ctx.needs_grad[1]) dx = ReduceSumTo(Where(condition, dy, zero), Shape(ctx.inputs[1].GetShape()));
  if (ctx.needs_grad[2]) dy_of_y = ReduceSumTo(Where(condition, zero, dy), Shape(ctx.inputs[2].GetShape()));
  return {Blob(), dx, dy_of_y};
}

WEIR_REGISTER_OP({.type = "where",
                  .num_inputs = 3,
                  .input_names = {"condition", "x", "y"},
                  .infer = InferWhere,
                  .gradient = WhereGradient,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace internal

Blob Where(const Blob& condition, const Blob& x, const Blob& y, std::string_view name) {
  return internal::AddOp1("where", {condition, x, y}, std::any(), name);
}

}  // namespace weir
