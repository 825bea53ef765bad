// max_pool2d and max_pool2d_grad on the CPU: f32 (and bf16 max_pool2d, for mixed precision: a maximum
// is exact in any dtype) through oneDNN (primitives, memories and the backward's workspace made once per
// task; large batches split over the intra-op pool, pool2d_dnnl.hpp), f64 through the reference loops
// of pool2d.hpp.
#include <dnnl.hpp>

#include "kernels/cpu/pool2d.hpp"
#include "kernels/cpu/pool2d_dnnl.hpp"
#include "kernels/cpu/widened.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class MaxPool2DCpu final : public DnnlPool2DKernel {
 public:
  explicit MaxPool2DCpu(const KernelSetup& setup) {
    const dnnl::memory::data_type type = DnnlDataType(setup.inputs[0].dtype);
    Init(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape),
         [type](const Pool2DGeometry& g) { return ForwardPoolWork(g, dnnl::algorithm::pooling_max, type); },
         SizeOf(setup.inputs[0].dtype));
  }
};

// oneDNN's max-pooling backward needs the forward's workspace (where each maximum was); it is
// recomputed here from x into buffers owned by the kernel, which costs one forward pooling.
class MaxPool2DGradCpu final : public DnnlPool2DKernel {
 public:
  explicit MaxPool2DGradCpu(const KernelSetup& setup) {
    Init(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[1].shape, setup.inputs[0].shape),
         [](const Pool2DGeometry& g) {
           const DnnlPool2D d = MakeDnnlPool2D(g);
           const dnnl::pooling_forward::primitive_desc forward_pd({dnnl::prop_kind::forward_training,
                                                                   dnnl::algorithm::pooling_max, d.x, d.y, d.strides,
                                                                   d.kernel, d.pad_l, d.pad_r},
                                                                  CpuEngine());
           const dnnl::pooling_backward::primitive_desc backward_pd(
               {dnnl::algorithm::pooling_max, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine(),
               forward_pd);
           const dnnl::memory x(d.x, CpuEngine(), DNNL_MEMORY_NONE), dy(d.y, CpuEngine(), DNNL_MEMORY_NONE),
               dx(d.x, CpuEngine(), DNNL_MEMORY_NONE);
           const dnnl::memory y(d.y, CpuEngine()), workspace(forward_pd.workspace_desc(), CpuEngine());  // owned
           PoolChunkWork work;
           work.steps.push_back(
               {dnnl::pooling_forward(forward_pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, workspace}}});
           work.steps.push_back({dnnl::pooling_backward(backward_pd),
                                 {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WORKSPACE, workspace}, {DNNL_ARG_DIFF_SRC, dx}}});
           work.views = {{dy, 0, false}, {x, 1, true}, {dx, PoolChunkWork::kOutput, true}};
           return work;
         });
  }
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
  // bf16 where oneDNN has native bf16 kernels, else the f32 kernel on widened values (the same maxima).
  // The gradient always through the f32 kernel: oneDNN's bf16 backward sums the dy of overlapping
  // windows in bf16, rounding each partial sum; widened, the sum is rounded once.
  RegisterKernel({"max_pool2d", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeKernel<MaxPool2DCpu>>);
  RegisterKernel({"max_pool2d_grad", Device::Kind::kCpu, DType::kBF16}, &MakeWidenedKernel);
  RegisterKernel({"max_pool2d_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MaxPool2DGradReferenceCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
