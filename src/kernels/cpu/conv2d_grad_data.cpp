// conv2d_grad_data on the CPU: f32 and bf16 through oneDNN's convolution_backward_data (primitives, reorders
// and scratchpads made once per task; large batches split over the intra-op pool), f64 through the
// reference loops.
#include "kernels/cpu/conv2d_common.hpp"
#include "kernels/cpu/widened.hpp"

namespace weir::internal {
namespace {

class Conv2DGradDataCpu final : public Conv2DDnnlKernel {
 public:
  explicit Conv2DGradDataCpu(const KernelSetup& setup) {
    const Conv2DPass pass = Conv2DPass::kBackwardData;
    const dnnl::memory::data_type type = DnnlDataType(setup.inputs[0].dtype), out = DnnlDataType(setup.outputs[0].dtype);
    Init(pass, setup, MakeConv2DGeometry(pass, setup), [type, out, pass](const Conv2DGeometry& g) {
      const Conv2DDnnlDescs d = MakeConv2DDnnlDescs(g, pass, type, out);
      const bool blocked = UseBlockedData(g);
      const dnnl::convolution_backward_data::desc op_desc(
          dnnl::algorithm::convolution_direct, blocked ? AnyLayout(d.x) : d.x, AnyLayout(d.weight),
          blocked ? AnyLayout(d.y) : d.y, d.strides, d.dilations, d.pad_l, d.pad_r);
      const dnnl::convolution_backward_data::primitive_desc desc(op_desc, UserScratchpad(), CpuEngine(),
                                                                 MakeConv2DForwardDesc(MakeConv2DDnnlDescs(g, pass, type, type), blocked));
      return Conv2DPrimitive{dnnl::convolution_backward_data(desc),
                             desc.scratchpad_desc(),
                             {{{DNNL_ARG_DIFF_DST, DnnlOperand(d.y, desc.diff_dst_desc(), false)},
                               {DNNL_ARG_WEIGHTS, DnnlOperand(d.weight, desc.weights_desc(), false)},
                               {DNNL_ARG_DIFF_SRC, DnnlOperand(d.x, desc.diff_src_desc(), true)}}}};
    });
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCpu, DType::kF32}, &MakeKernel<Conv2DGradDataCpu>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeKernel<Conv2DGradDataCpu>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<Conv2DReferenceCpu<Conv2DPass::kBackwardData, double>>);
}

}  // namespace
}  // namespace weir::internal
