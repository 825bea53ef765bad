// conv2d_grad_data: dx of conv2d from dy and the weight (a transposed convolution); x's shape is
// an attribute, since strides and padding make it ambiguous from dy's. Being conv2d's adjoint in x, it
// is also flow.nn.conv2d_transpose (Conv2DTranspose), and has a gradient of its own.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/conv2d.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
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

// out = A_w^T(dy), A_w(x) = conv2d(x, w): the gradient for dy is A_w of the incoming gradient g, and for
// the weight that of <A_w(g), dy> in w, conv2d's filter gradient with g as x and dy as dy.
std::vector<Blob> GradDataGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<Conv2DGradAttrs>();
  const Blob& dy = ctx.inputs[0];
  const Blob& weight = ctx.inputs[1];
  const Blob& g = ctx.output_grads[0];
  const Shape weight_shape = weight.GetShape();  // copied: adding an op may reallocate the value list
  Blob d_dy, d_weight;
  if (ctx.needs_grad[0]) d_dy = Conv2D(g, weight, attrs.conv);
  if (ctx.needs_grad[1]) d_weight = AddOp1("conv2d_grad_filter", {dy, g}, Conv2DGradAttrs{attrs.conv, weight_shape}, {});
  return {d_dy, d_weight};
}

// dx of each image needs only that image's dy (and the whole weight).
std::vector<SbpSignature> GradDataSbp(const SbpContext&) { return {{{Sbp::S(0), Sbp::B()}, {Sbp::S(0)}}}; }

WEIR_REGISTER_OP({.type = "conv2d_grad_data",
                  .num_inputs = 2,
                  .input_names = {"dy", "weight"},
                  .infer = InferConv2DGradData,
                  .gradient = GradDataGradient,
                  .sbp = GradDataSbp,
                  // By name: conv2d's attributes and x's shape, conv2d_transpose's output shape.
                  .read_attrs = ReadAttrsWithShape("conv2d", &Conv2DGradAttrs::conv, &Conv2DGradAttrs::shape)});

}  // namespace
}  // namespace internal

Blob Conv2DTranspose(const Blob& x, const Blob& weight, Shape output_shape, Conv2DAttrs attrs, std::string_view name) {
  return internal::AddOp1("conv2d_grad_data", {x, weight}, internal::Conv2DGradAttrs{attrs, std::move(output_shape)}, name);
}

}  // namespace weir
