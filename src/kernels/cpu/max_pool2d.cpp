// max_pool2d and max_pool2d_grad on the CPU: f32 through oneDNN (primitives, memories and the
// backward's workspace made once per task), f64 through the reference loops of pool2d.hpp.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/cpu/pool2d.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class MaxPool2DCpu final : public Kernel {
 public:
  explicit MaxPool2DCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape)) {
    if (geometry_.Empty()) return;
    const DnnlPool2D d = MakeDnnlPool2D(geometry_);
    const dnnl::pooling_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r},
        CpuEngine());
    primitive_ = dnnl::pooling_forward(pd);
    x_ = dnnl::memory(d.x, CpuEngine(), DNNL_MEMORY_NONE);
    y_ = dnnl::memory(d.y, CpuEngine(), DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}};
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (geometry_.Empty()) return;
    x_.set_data_handle(const_cast<void*>(inputs[0].data));
    y_.set_data_handle(outputs[0].data);
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  Pool2DGeometry geometry_;
  dnnl::stream stream_{CpuEngine()};
  dnnl::pooling_forward primitive_;
  dnnl::memory x_, y_;
  std::unordered_map<int, dnnl::memory> args_;
};

// oneDNN's max-pooling backward needs the forward's workspace (where each maximum was); it is
// recomputed here from x into buffers owned by the kernel, which costs one forward pooling.
class MaxPool2DGradCpu final : public Kernel {
 public:
  explicit MaxPool2DGradCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[1].shape, setup.inputs[0].shape)) {
    if (geometry_.Empty()) return;
    const DnnlPool2D d = MakeDnnlPool2D(geometry_);
    const dnnl::pooling_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r},
        CpuEngine());
    const dnnl::pooling_backward::primitive_desc backward_pd(
        {dnnl::algorithm::pooling_max, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine(), forward_pd);
    forward_ = dnnl::pooling_forward(forward_pd);
    backward_ = dnnl::pooling_backward(backward_pd);
    y_buffer_.resize(static_cast<std::size_t>(geometry_.n * geometry_.c * geometry_.out_h * geometry_.out_w));
    workspace_buffer_.resize(forward_pd.workspace_desc().get_size());
    x_ = dnnl::memory(d.x, CpuEngine(), DNNL_MEMORY_NONE);
    dy_ = dnnl::memory(d.y, CpuEngine(), DNNL_MEMORY_NONE);
    dx_ = dnnl::memory(d.x, CpuEngine(), DNNL_MEMORY_NONE);
    const dnnl::memory y(d.y, CpuEngine(), y_buffer_.data());
    const dnnl::memory workspace(forward_pd.workspace_desc(), CpuEngine(), workspace_buffer_.data());
    forward_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, workspace}};
    backward_args_ = {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_WORKSPACE, workspace}, {DNNL_ARG_DIFF_SRC, dx_}};
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (geometry_.Empty()) return;
    dy_.set_data_handle(const_cast<void*>(inputs[0].data));
    x_.set_data_handle(const_cast<void*>(inputs[1].data));
    dx_.set_data_handle(outputs[0].data);
    forward_.execute(stream_, forward_args_);
    backward_.execute(stream_, backward_args_);
    stream_.wait();
  }

 private:
  Pool2DGeometry geometry_;
  dnnl::stream stream_{CpuEngine()};
  dnnl::pooling_forward forward_;
  dnnl::pooling_backward backward_;
  std::vector<float> y_buffer_;
  std::vector<std::uint8_t> workspace_buffer_;
  dnnl::memory x_, dy_, dx_;
  std::unordered_map<int, dnnl::memory> forward_args_, backward_args_;
};

template <typename T> class MaxPool2DReferenceCpu final : public Kernel {
 public:
  explicit MaxPool2DReferenceCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MaxPoolReference(geometry_, inputs[0].As<T>(), outputs[0].As<T>());
  }

 private:
  Pool2DGeometry geometry_;
};

template <typename T> class MaxPool2DGradReferenceCpu final : public Kernel {
 public:
  explicit MaxPool2DGradReferenceCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[1].shape, setup.inputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MaxPoolGradReference(geometry_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>());
  }

 private:
  Pool2DGeometry geometry_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"max_pool2d", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MaxPool2DCpu>);
  RegisterKernel({"max_pool2d", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MaxPool2DReferenceCpu<double>>);
  RegisterKernel({"max_pool2d_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MaxPool2DGradCpu>);
  RegisterKernel({"max_pool2d_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MaxPool2DGradReferenceCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
