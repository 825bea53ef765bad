// broadcast_to: x repeated to a target shape under numpy broadcasting (x right-aligned, each of its
// dims 1 or the target's). Gradient rules use it to spread a reduced gradient back over its input, and
// flow.broadcast_to_compatible_with builds it by name. Its gradient sums dy back to x's shape.
#include "graph/attrs_by_name.hpp"
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "kernels/attrs/gradient_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferBroadcastTo(const InferContext& ctx) {
  const Shape& shape = ctx.Get<BroadcastToAttrs>().shape;
  const TensorMeta& x = ctx.inputs[0];
  if (!IsNumber(x.dtype)) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 input, got {}", x.dtype);
  }
  if (!BroadcastsTo(x.shape, shape)) throw OpError(ctx.op_type, "x {} does not broadcast to {}", x.shape, shape);
  return {{shape, x.dtype}};
}

std::vector<Blob> BroadcastToGradient(const GradContext& ctx) {
  return {ReduceSumTo(ctx.output_grads[0], ctx.inputs[0].GetShape())};
}

WEIR_REGISTER_OP({.type = "broadcast_to",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferBroadcastTo,
                  .gradient = BroadcastToGradient,
                  .read_attrs = ReadAttrs<BroadcastToAttrs>(Attr("shape", &BroadcastToAttrs::shape))});

}  // namespace

Blob BroadcastTo(const Blob& x, Shape shape) {
  if (x.GetShape() == shape) return x;
  // Only 1s differ (e.g. (1,3) to (3)): the same elements in the same order.
  if (x.GetShape().NumElements() == shape.NumElements() && BroadcastsTo(x.GetShape(), shape)) {
    return Reshape(x, {.shape = shape.Dims()});
  }
  return AddOp1("broadcast_to", {x}, BroadcastToAttrs{std::move(shape)}, {});
}

}  // namespace weir::internal
