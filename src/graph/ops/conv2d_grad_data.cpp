// conv2d_grad_data: dx of conv2d from dy and the weight (a transposed convolution); x's shape is
// an attribute, since strides and padding make it ambiguous from dy's.
#include "graph/op_registry.hpp"
#include "graph/ops/conv2d.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferConv2DGradData(const InferContext& ctx) {
  const auto& attrs = ctx.Get<Conv2DGradAttrs>();
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& weight = ctx.inputs[1];
  const TensorMeta x{attrs.shape, weight.dtype};
  const TensorMeta y = InferConv2DOutput(ctx.op_type, x, weight, attrs.conv);
  if (dy != y) {
    throw OpError(ctx.op_type, "dy {} does not match conv2d's output {} for x {} and weight {}", dy.ToString(),
                  y.ToString(), x.shape, weight.shape);
  }
  return {x};
}

// dx of each image needs only that image's dy (and the whole weight).
std::vector<SbpSignature> GradDataSbp(const SbpContext&) { return {{{Sbp::S(0), Sbp::B()}, {Sbp::S(0)}}}; }

WEIR_REGISTER_OP({.type = "conv2d_grad_data",
                  .num_inputs = 2,
                  .input_names = {"dy", "weight"},
                  .infer = InferConv2DGradData,
                  .sbp = GradDataSbp});

}  // namespace
}  // namespace weir::internal
