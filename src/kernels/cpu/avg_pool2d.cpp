// avg_pool2d and avg_pool2d_grad on the CPU: f32 through oneDNN (avg excluding padding; primitives
// and memories made once per task), f64 through the reference loops of pool2d.hpp.
#include <unordered_map>

#include <dnnl.hpp>

#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/cpu/pool2d.hpp"
#include "kernels/cpu/pool_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

constexpr auto kAvg = dnnl::algorithm::pooling_avg_exclude_padding;

class AvgPool2DCpu final : public Kernel {
 public:
  explicit AvgPool2DCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape)) {
    if (geometry_.Empty()) return;
    const DnnlPool2D d = MakeDnnlPool2D(geometry_);
    const dnnl::pooling_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, kAvg, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine());
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

class AvgPool2DGradCpu final : public Kernel {
 public:
  explicit AvgPool2DGradCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.Get<Pool2DGradAttrs>().x_shape,
                                     setup.inputs[0].shape)) {
    if (geometry_.Empty()) return;
    const DnnlPool2D d = MakeDnnlPool2D(geometry_);
    // The backward primitive needs a forward one as a hint; it is never run.
    const dnnl::pooling_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, kAvg, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine());
    primitive_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
        {kAvg, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine(), hint));
    dy_ = dnnl::memory(d.y, CpuEngine(), DNNL_MEMORY_NONE);
    dx_ = dnnl::memory(d.x, CpuEngine(), DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}};
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (geometry_.Empty()) return;
    dy_.set_data_handle(const_cast<void*>(inputs[0].data));
    dx_.set_data_handle(outputs[0].data);
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  Pool2DGeometry geometry_;
  dnnl::stream stream_{CpuEngine()};
  dnnl::pooling_backward primitive_;
  dnnl::memory dy_, dx_;
  std::unordered_map<int, dnnl::memory> args_;
};

template <typename T> class AvgPool2DReferenceCpu final : public Kernel {
 public:
  explicit AvgPool2DReferenceCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    AvgPoolReference(geometry_, inputs[0].As<T>(), outputs[0].As<T>());
  }

 private:
  Pool2DGeometry geometry_;
};

template <typename T> class AvgPool2DGradReferenceCpu final : public Kernel {
 public:
  explicit AvgPool2DGradReferenceCpu(const KernelSetup& setup)
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.Get<Pool2DGradAttrs>().x_shape,
                                     setup.inputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    AvgPoolGradReference(geometry_, inputs[0].As<T>(), outputs[0].As<T>());
  }

 private:
  Pool2DGeometry geometry_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"avg_pool2d", Device::Kind::kCpu, DType::kF32}, &MakeKernel<AvgPool2DCpu>);
  RegisterKernel({"avg_pool2d", Device::Kind::kCpu, DType::kF64}, &MakeKernel<AvgPool2DReferenceCpu<double>>);
  RegisterKernel({"avg_pool2d_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<AvgPool2DGradCpu>);
  RegisterKernel({"avg_pool2d_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<AvgPool2DGradReferenceCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
