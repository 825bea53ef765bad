// max_pool2d, avg_pool2d and their gradients on CUDA (kernels/cuda/pool2d.cu): own kernels on the CPU
// reference's window arithmetic, since Weir's SAME and ceil-mode pads are asymmetric and cuDNN's
// pooling descriptors take one pad per dimension.
#include <cstdint>

#include "kernels/attrs/pool_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/pool2d_geometry.hpp"

namespace weir::internal {
namespace {

enum class PoolOp : std::uint8_t { kMax, kMaxGrad, kAvg, kAvgGrad };

template <typename T> class Pool2DCuda final : public Kernel {
 public:
  explicit Pool2DCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), op_(OpOf(setup.op_type)) {
    switch (op_) {  // the geometry of pooling x into y, from whichever shapes the op has
      case PoolOp::kMax:
      case PoolOp::kAvg:
        geometry_ = MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape);
        break;
      case PoolOp::kMaxGrad:  // (dy, x) -> dx
        geometry_ = MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[1].shape, setup.inputs[0].shape);
        break;
      case PoolOp::kAvgGrad:  // dy -> dx
        geometry_ = MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.outputs[0].shape, setup.inputs[0].shape);
        break;
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    switch (op_) {
      case PoolOp::kMax: return cuda::MaxPool2D<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
      case PoolOp::kAvg: return cuda::AvgPool2D<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
      case PoolOp::kMaxGrad:
        return cuda::MaxPool2DGrad<T>(stream_, geometry_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>());
      case PoolOp::kAvgGrad: return cuda::AvgPool2DGrad<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
    }
  }

 private:
  static PoolOp OpOf(std::string_view op) {
    return op == "max_pool2d" ? PoolOp::kMax : op == "max_pool2d_grad" ? PoolOp::kMaxGrad
                                             : op == "avg_pool2d"      ? PoolOp::kAvg
                                                                       : PoolOp::kAvgGrad;
  }

  void* stream_;
  PoolOp op_;
  Pool2DGeometry geometry_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<Pool2DCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<Pool2DCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
