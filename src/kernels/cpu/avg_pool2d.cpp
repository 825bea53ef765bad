// avg_pool2d and avg_pool2d_grad on the CPU: f32 through oneDNN (avg excluding padding; primitives
// and memories made once per task; large batches split over the intra-op pool, pool2d_dnnl.hpp),
// f64 through the reference loops of pool2d.hpp.
#include <dnnl.hpp>

#include "kernels/cpu/pool2d.hpp"
#include "kernels/cpu/pool2d_dnnl.hpp"
#include "kernels/attrs/pool_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

constexpr auto kAvg = dnnl::algorithm::pooling_avg_exclude_padding;

class AvgPool2DCpu final : public DnnlPool2DKernel {
 public:
  explicit AvgPool2DCpu(const KernelSetup& setup) {
    Init(MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape),
         [](const Pool2DGeometry& g) { return ForwardPoolWork(g, kAvg); });
  }
};

class AvgPool2DGradCpu final : public DnnlPool2DKernel {
 public:
  explicit AvgPool2DGradCpu(const KernelSetup& setup) {
    // x's shape from the output meta, not the attrs: a device's piece of a split batch is smaller.
    Init(MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.outputs[0].shape, setup.inputs[0].shape),
         [](const Pool2DGeometry& g) {
      const DnnlPool2D d = MakeDnnlPool2D(g);
      // The backward primitive needs a forward one as a hint; it is never run.
      const dnnl::pooling_forward::primitive_desc hint(
          {dnnl::prop_kind::forward_training, kAvg, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine());
      const dnnl::pooling_backward::primitive_desc pd({kAvg, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r},
                                                      CpuEngine(), hint);
      const dnnl::memory dy(d.y, CpuEngine(), DNNL_MEMORY_NONE), dx(d.x, CpuEngine(), DNNL_MEMORY_NONE);
      PoolChunkWork work;
      work.steps.push_back({dnnl::pooling_backward(pd), {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}}});
      work.views = {{dy, 0, false}, {dx, PoolChunkWork::kOutput, true}};
      return work;
    });
  }
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
      : geometry_(MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.outputs[0].shape, setup.inputs[0].shape)) {}

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
