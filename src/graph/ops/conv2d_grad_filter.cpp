// conv2d_grad_filter: dweight of conv2d from dy and x; the weight's shape is an attribute, since
// dy and x do not determine the kernel size (SAME padding).
#include "graph/op_registry.hpp"
#include "graph/ops/conv2d.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferConv2DGradFilter(const InferContext& ctx) {
  const auto& attrs = ctx.Get<Conv2DGradAttrs>();
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  const TensorMeta weight{attrs.shape, x.dtype};
  const TensorMeta y = InferConv2DOutput(ctx.op_type, x, weight, attrs.conv);
  if (dy != y) {
    throw OpError(ctx.op_type, "dy {} does not match conv2d's output {} for x {} and weight {}", dy.ToString(),
                  y.ToString(), x.shape, weight.shape);
  }
  return {weight};
}

// The filter gradient sums over the batch: each device's images give an addend.
std::vector<SbpSignature> GradFilterSbp(const SbpContext&) { return {{{Sbp::S(0), Sbp::S(0)}, {Sbp::P()}}}; }

WEIR_REGISTER_OP({.type = "conv2d_grad_filter",
                  .num_inputs = 2,
                  .input_names = {"dy", "x"},
                  .infer = InferConv2DGradFilter,
                  .sbp = GradFilterSbp});

}  // namespace
}  // namespace weir::internal
