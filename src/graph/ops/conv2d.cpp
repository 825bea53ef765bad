// conv2d: y = x ⋆ weight (cross-correlation, OneFlow's flow.nn.conv2d), NCHW or NHWC, with strides,
// dilations, SAME/VALID/explicit padding and groups. The bias is a separate bias_add.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/conv2d.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferConv2D(const InferContext& ctx) {
  return {InferConv2DOutput(ctx.op_type, ctx.inputs[0], ctx.inputs[1], ctx.Get<Conv2DAttrs>())};
}

// dx is the transposed convolution of dy with the same weight; dweight correlates dy with x.
std::vector<Blob> Conv2DGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<Conv2DAttrs>();
  const Blob& x = ctx.inputs[0];
  const Blob& weight = ctx.inputs[1];
  const Blob& dy = ctx.output_grads[0];
  // Shapes copied first: adding an op may reallocate the value list GetShape() refers into.
  const Shape x_shape = x.GetShape();
  const Shape weight_shape = weight.GetShape();
  Blob dx, dweight;
  if (ctx.needs_grad[0]) dx = AddOp1("conv2d_grad_data", {dy, weight}, Conv2DGradAttrs{attrs, x_shape}, {});
  if (ctx.needs_grad[1]) dweight = AddOp1("conv2d_grad_filter", {dy, x}, Conv2DGradAttrs{attrs, weight_shape}, {});
  return {dx, dweight};
}

// Images are independent: the batch splits (data parallel); the filters split the output channels.
std::vector<SbpSignature> ConvSbp(const SbpContext& ctx) {
  const int channels = ctx.Get<Conv2DAttrs>().data_format == DataFormat::kNCHW ? 1 : 3;
  std::vector<SbpSignature> signatures{{{Sbp::S(0), Sbp::B()}, {Sbp::S(0)}}};
  if (ctx.Get<Conv2DAttrs>().groups == 1) signatures.push_back({{Sbp::B(), Sbp::S(0)}, {Sbp::S(channels)}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "conv2d",
                  .num_inputs = 2,
                  .input_names = {"x", "weight"},
                  .infer = InferConv2D,
                  .gradient = Conv2DGradient,
                  .sbp = ConvSbp,
                  .read_attrs = ReadAttrs<Conv2DAttrs>(Attr("strides", &Conv2DAttrs::strides), Attr("dilations", &Conv2DAttrs::dilations),
                                                      Attr("padding", &Conv2DAttrs::padding),
                                                      Attr("data_format", &Conv2DAttrs::data_format),
                                                      Attr("groups", &Conv2DAttrs::groups))});

}  // namespace
}  // namespace internal

Blob Conv2D(const Blob& x, const Blob& weight, Conv2DAttrs attrs, std::string_view name) {
  return internal::AddOp1("conv2d", {x, weight}, attrs, name);
}

}  // namespace weir
