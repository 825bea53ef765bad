// conv2d forward on the CPU: f32 and bf16 through oneDNN's convolution_forward (primitives, reorders and
// scratchpads made once per task; large batches split over the intra-op pool), f64 through the
// reference loops. conv2d_bias_act (planner-fused conv2d + bias_add [+ relu]) is the same kernel
// with oneDNN's bias and relu post-op, saving two passes over y, and a residual sum as a binary
// post-op before the relu (channels-last only: the residual is read in y's own layout).
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/cpu/conv2d_common.hpp"
#include "kernels/cpu/widened.hpp"
#include "kernels/attrs/fused_attrs.hpp"

namespace weir::internal {
namespace {

// kFused: conv2d_bias_act, inputs (x, weight, bias).
template <bool kFused> class Conv2DCpu final : public Conv2DDnnlKernel {
 public:
  explicit Conv2DCpu(const KernelSetup& setup) {
    constexpr bool fused = kFused;
    const Conv2DAttrs& attrs = fused ? setup.Get<FusedConv2DAttrs>().conv : setup.Get<Conv2DAttrs>();
    const Conv2DGeometry geometry =
        MakeConv2DGeometry(attrs, setup.inputs[0].shape, setup.inputs[1].shape, setup.outputs[0].shape);
    const bool relu = fused && setup.Get<FusedConv2DAttrs>().activation == FusedActivation::kRelu;
    const bool residual = fused && setup.Get<FusedConv2DAttrs>().add_residual;
    if (residual && !geometry.nhwc) {
      throw std::invalid_argument(fmt::format("[conv2d_bias_act] '{}': a residual sum needs a channels-last convolution",
                                              setup.op_name));
    }
    const dnnl::memory::data_type type = DnnlDataType(setup.inputs[0].dtype), out = DnnlDataType(setup.outputs[0].dtype);
    Init(Conv2DPass::kForward, setup, geometry, [&](const Conv2DGeometry& g) {
      const Conv2DDnnlDescs d = MakeConv2DDnnlDescs(g, Conv2DPass::kForward, type, out);
      // Post-ops in order: the residual (y's layout and type, this chunk's images), then the relu.
      dnnl::primitive_attr primitive_attr = UserScratchpad();
      dnnl::post_ops post_ops;
      if (residual) post_ops.append_binary(dnnl::algorithm::binary_add, d.y);
      if (relu) post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      primitive_attr.set_post_ops(post_ops);
      const dnnl::memory::desc bias({g.filters}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
      const auto desc = MakeConv2DForwardDesc(d, UseBlockedData(g), primitive_attr, fused ? &bias : nullptr);
      Conv2DPrimitive made{dnnl::convolution_forward(desc),
                           desc.scratchpad_desc(),
                           {{{DNNL_ARG_SRC, DnnlOperand(d.x, desc.src_desc(), false)},
                             {DNNL_ARG_WEIGHTS, DnnlOperand(d.weight, desc.weights_desc(), false)},
                             {DNNL_ARG_DST, DnnlOperand(d.y, desc.dst_desc(), true)}}}};
      if (fused) made.bias = DnnlOperand(bias, desc.bias_desc(), false);
      if (residual) made.residual = dnnl::memory(d.y, CpuEngine(), DNNL_MEMORY_NONE);
      return made;
    });
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"conv2d", Device::Kind::kCpu, DType::kF32}, &MakeKernel<Conv2DCpu<false>>);
  // bf16 (mixed precision): the result bf16, or f32 where the planner fused the product with its cast.
  RegisterKernel({"conv2d", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeKernel<Conv2DCpu<false>>>);
  RegisterKernel({"conv2d_bias_act", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeKernel<Conv2DCpu<true>>>);
  RegisterKernel({"conv2d_bias_act", Device::Kind::kCpu, DType::kF32}, &MakeKernel<Conv2DCpu<true>>);
  RegisterKernel({"conv2d", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<Conv2DReferenceCpu<Conv2DPass::kForward, double>>);
}

}  // namespace
}  // namespace weir::internal
