// conv2d, its two gradients and the planner-fused conv2d_bias_act on CUDA, through cuDNN (kernels/
// cuda/conv2d.cu): descriptors, algorithm and workspace chosen once per kernel, i.e. per shape. cuDNN
// pads symmetrically; Weir's SAME pad puts the odd pixel after, so a convolution with unequal pads
// runs on a padded copy of x (forward, filter gradient) or computes the padded dx and crops it (data
// gradient), the copy in the kernel's scratch. conv2d_bias_act: the convolution, then the bias per
// channel and the relu in place (cudnnConvolutionBiasActivationForward takes relu only with one
// algorithm, and our bias add is one more pass either way).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/conv2d_geometry.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <Conv2DPass kPass, typename T> class Conv2DCuda final : public Kernel {
 public:
  explicit Conv2DCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), fused_(setup.op_type == "conv2d_bias_act"),
        geometry_(fused_ ? MakeConv2DGeometry(setup.Get<FusedConv2DAttrs>().conv, setup.inputs[0].shape,
                                              setup.inputs[1].shape, setup.outputs[0].shape)
                         : MakeConv2DGeometry(kPass, setup)),
        out_bytes_(setup.outputs[0].NumBytes()) {
    // An empty operand: y and dx are empty (or an empty sum, zero), dweight an empty sum.
    if (geometry_.XCount() == 0 || geometry_.YCount() == 0 || geometry_.WeightCount() == 0) return;
    relu_ = fused_ && setup.Get<FusedConv2DAttrs>().activation == FusedActivation::kRelu;
    if (fused_) {
      const Shape& y = setup.outputs[0].shape;
      std::vector<std::int64_t> bias(4, 1);
      bias[geometry_.nhwc ? 3 : 1] = geometry_.filters;
      PlanBroadcast(y.Dims(), bias, y.Dims(), bias_plan_);
    }
    std::size_t padded_bytes = 0;
    Conv2DGeometry cudnn_geometry = geometry_;
    if (!geometry_.SymmetricPads()) {
      shift_ = PadShift(geometry_, kPass == Conv2DPass::kBackwardData);
      cudnn_geometry = Prepadded(geometry_);
      padded_bytes = static_cast<std::size_t>(cudnn_geometry.XCount()) * sizeof(T);
    }
    convolution_ = std::make_unique<cuda::Convolution>(cudnn_geometry, kPass, std::is_same_v<T, double>);
    // Scratch: cuDNN's workspace, then the padded image (256-byte aligned, as cudaMalloc's own).
    workspace_bytes_ = (convolution_->WorkspaceBytes() + 255) / 256 * 256;
    scratch_.emplace(setup.device.index, workspace_bytes_ + padded_bytes);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (!convolution_) {
      cuda::Zero(stream_, outputs[0].data, out_bytes_);
      return;
    }
    void* workspace = scratch_->template As<void>();
    T* padded = shift_ ? scratch_->template As<T>(workspace_bytes_) : nullptr;
    const T* a = inputs[0].As<T>();
    const T* b = inputs[1].As<T>();
    T* out = outputs[0].As<T>();
    switch (kPass) {
      case Conv2DPass::kForward:  // (x, weight) -> y, x padded first if need be
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, a, padded);
        convolution_->Run(stream_, shift_ ? padded : a, b, out, workspace);
        if (fused_) {
          const std::int64_t count = geometry_.YCount();
          cuda::BroadcastBinary<T>(stream_, cuda::Binary::kAdd, bias_plan_, out, inputs[2].As<T>(), out, count);
          if (relu_) cuda::ActivationForward<T>(stream_, cuda::Activation::kRelu, out, out, count);
        }
        break;
      case Conv2DPass::kBackwardData:  // (dy, weight) -> the padded dx, cropped
        convolution_->Run(stream_, a, b, shift_ ? padded : out, workspace);
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, padded, out);
        break;
      case Conv2DPass::kBackwardFilter:  // (dy, x) -> dweight, x padded first if need be
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, b, padded);
        convolution_->Run(stream_, a, shift_ ? padded : b, out, workspace);
        break;
    }
  }

 private:
  void* stream_;
  bool fused_;
  Conv2DGeometry geometry_;
  std::size_t out_bytes_;
  bool relu_ = false;
  BroadcastPlan bias_plan_;               // conv2d_bias_act: the bias along y's channel axis
  std::optional<ImageShift> shift_;       // unequal pads: x into the padded image, or the padded dx out
  std::unique_ptr<cuda::Convolution> convolution_;  // null for an empty operand
  std::size_t workspace_bytes_ = 0;
  std::optional<DeviceScratch> scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"conv2d", Device::Kind::kCuda, DType::kF32}, &MakeKernel<Conv2DCuda<Conv2DPass::kForward, float>>);
  RegisterKernel({"conv2d", Device::Kind::kCuda, DType::kF64}, &MakeKernel<Conv2DCuda<Conv2DPass::kForward, double>>);
  RegisterKernel({"conv2d_bias_act", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kForward, float>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardData, float>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardData, double>>);
  RegisterKernel({"conv2d_grad_filter", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardFilter, float>>);
  RegisterKernel({"conv2d_grad_filter", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardFilter, double>>);
}

}  // namespace
}  // namespace weir::internal
