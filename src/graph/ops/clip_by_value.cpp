// clip_by_value: x clamped to [min, max] elementwise, either bound optional (OneFlow's
// clip_by_value / clip_by_scalar).
#include <cmath>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferClipByValue(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const auto& attrs = ctx.Get<ClipAttrs>();
  if (!IsNumber(x.dtype)) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 x, got {}", x.dtype);
  }
  if (!attrs.min && !attrs.max) throw OpError(ctx.op_type, "needs a min or a max bound, got neither");
  if ((attrs.min && std::isnan(*attrs.min)) || (attrs.max && std::isnan(*attrs.max))) {
    throw OpError(ctx.op_type, "bounds must be numbers, got min {} and max {}", attrs.min.value_or(-INFINITY),
                  attrs.max.value_or(INFINITY));
  }
  if (attrs.min && attrs.max && *attrs.min > *attrs.max) {
    throw OpError(ctx.op_type, "min {} is greater than max {}", *attrs.min, *attrs.max);
  }
  return {x};
}

// dy passes where x was not clipped, bounds included (OneFlow's clip_by_scalar_grad), or strictly
// inside them with open_gradient (OneFlow's hardtanh_grad).
std::vector<Blob> ClipByValueGradient(const GradContext& ctx) {
  return {AddOp1("clip_by_value_grad", {ctx.output_grads[0], ctx.inputs[0]}, ctx.Get<ClipAttrs>(), {})};
}

WEIR_REGISTER_OP({.type = "clip_by_value",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferClipByValue,
                  .gradient = ClipByValueGradient,
                  .sbp = ElementwiseRule(),
                  .read_attrs = ReadAttrs<ClipAttrs>(Attr("min", &ClipAttrs::min), Attr("max", &ClipAttrs::max),
                                                     Attr("open_gradient", &ClipAttrs::open_gradient))});

}  // namespace
}  // namespace internal

Blob ClipByValue(const Blob& x, ClipAttrs attrs, std::string_view name) {
  return internal::AddOp1("clip_by_value", {x}, attrs, name);
}

}  // namespace weir
