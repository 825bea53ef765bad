// conv2d forward on the CPU: f32 through oneDNN's convolution_forward (primitives, reorders and
// scratchpads made once per task; large batches split over the intra-op pool), f64 through the
// reference loops.
#include "kernels/cpu/conv2d_common.hpp"

namespace weir::internal {
namespace {

class Conv2DCpu final : public Conv2DDnnlKernel {
 public:
  explicit Conv2DCpu(const KernelSetup& setup) {
    Init(Conv2DPass::kForward, MakeConv2DGeometry(Conv2DPass::kForward, setup), [](const Conv2DGeometry& g) {
      const Conv2DDnnlDescs d = MakeConv2DDnnlDescs(g);
      const auto desc = MakeConv2DForwardDesc(d, UseBlockedData(g), UserScratchpad());
      return Conv2DPrimitive{dnnl::convolution_forward(desc),
                             desc.scratchpad_desc(),
                             {{{DNNL_ARG_SRC, DnnlOperand(d.x, desc.src_desc(), false)},
                               {DNNL_ARG_WEIGHTS, DnnlOperand(d.weight, desc.weights_desc(), false)},
                               {DNNL_ARG_DST, DnnlOperand(d.y, desc.dst_desc(), true)}}}};
    });
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"conv2d", Device::Kind::kCpu, DType::kF32}, &MakeKernel<Conv2DCpu>);
  RegisterKernel({"conv2d", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<Conv2DReferenceCpu<Conv2DPass::kForward, double>>);
}

}  // namespace
}  // namespace weir::internal
