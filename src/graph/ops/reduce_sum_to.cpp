// reduce_sum_to: x summed down to a target shape that broadcasts to x's shape (the adjoint of
// broadcast_to). Gradient rules use it to reduce a broadcast operand's gradient to its shape.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "kernels/gradient_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferReduceSumTo(const InferContext& ctx) {
  const Shape& shape = ctx.Get<ReduceSumToAttrs>().shape;
  const TensorMeta& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64 && x.dtype != DType::kI32 && x.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects an f32, f64, i32 or i64 input, got {}", x.dtype);
  }
  if (!BroadcastsTo(shape, x.shape)) throw OpError(ctx.op_type, "{} does not broadcast to x {}", shape, x.shape);
  return {{shape, x.dtype}};
}

WEIR_REGISTER_OP({.type = "reduce_sum_to", .num_inputs = 1, .input_names = {"x"}, .infer = InferReduceSumTo});

}  // namespace

Blob ReduceSumTo(const Blob& x, Shape shape) {
  if (x.GetShape() == shape) return x;
  if (x.GetShape().NumElements() == shape.NumElements() && BroadcastsTo(shape, x.GetShape())) {
    return Reshape(x, {.shape = shape.Dims()});
  }
  return AddOp1("reduce_sum_to", {x}, ReduceSumToAttrs{std::move(shape)}, {});
}

}  // namespace weir::internal
