// reduce_sum_to: x summed down to a target shape that broadcasts to x's shape (the adjoint of
// broadcast_to). Gradient rules use it to reduce a broadcast operand's gradient to its shape.
#include <algorithm>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "kernels/attrs/gradient_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferReduceSumTo(const InferContext& ctx) {
  const Shape& shape = ctx.Get<ReduceSumToAttrs>().shape;
  const TensorMeta& x = ctx.inputs[0];
  // i8 too: the gradient of an i8 loss sums back over broadcast axes (wrapping, as the forward ops do).
  if (!IsNumber(x.dtype) && x.dtype != DType::kI8) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32, i64 or i8 input, got {}", x.dtype);
  }
  if (!BroadcastsTo(shape, x.shape)) throw OpError(ctx.op_type, "{} does not broadcast to x {}", shape, x.shape);
  return {{shape, x.dtype}};
}

// The axes summed away (those the target lacks or has as 1) give partial sums when split.
std::vector<SbpSignature> ReduceSumToSbp(const SbpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  const Shape& target = ctx.Get<ReduceSumToAttrs>().shape;
  std::vector<int> reduced;
  for (int axis = 0; axis < x.Rank(); ++axis) {
    const int aligned = axis - (x.Rank() - target.Rank());
    if (aligned < 0 || (target[aligned] == 1 && x[axis] != 1)) reduced.push_back(axis);
  }
  // Leading axes disappear, the others stay (as 1 where summed): keep_dims for the trailing ones.
  std::vector<SbpSignature> signatures;
  for (int axis = 0; axis < x.Rank(); ++axis) {
    const int aligned = axis - (x.Rank() - target.Rank());
    const bool summed = std::find(reduced.begin(), reduced.end(), axis) != reduced.end();
    signatures.push_back({{Sbp::S(axis)}, {summed ? Sbp::P() : Sbp::S(aligned)}});
  }
  signatures.push_back({{Sbp::P()}, {Sbp::P()}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "reduce_sum_to", .num_inputs = 1, .input_names = {"x"}, .infer = InferReduceSumTo,
                  .sbp = ReduceSumToSbp});

}  // namespace

Blob ReduceSumTo(const Blob& x, Shape shape) {
  if (x.GetShape() == shape) return x;
  if (x.GetShape().NumElements() == shape.NumElements() && BroadcastsTo(shape, x.GetShape())) {
    return Reshape(x, {.shape = shape.Dims()});
  }
  return AddOp1("reduce_sum_to", {x}, ReduceSumToAttrs{std::move(shape)}, {});
}

}  // namespace weir::internal
