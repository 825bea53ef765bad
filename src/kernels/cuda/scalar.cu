// scalar and scalar_grad on CUDA: a grid-stride loop over kernels/functors/scalar.hpp, the CPU
// kernels' math. Integer division (x / s, s / x) stays on the CPU, where a zero divisor fails the call.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/scalar.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> __global__ void ScalarKernel(ScalarOpKind kind, T value, const T* x, T* y, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = ApplyScalar(kind, x[i], value); }
}
template <typename T>
__global__ void ScalarGradKernel(ScalarOpKind kind, T value, const T* dy, const T* x, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = ScalarGrad(kind, dy[i], x[i], value); }
}

template <typename T> class ScalarCuda final : public Kernel {
 public:
  explicit ScalarCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<ScalarAttrs>().kind),
        value_(static_cast<T>(setup.Get<ScalarAttrs>().value)), count_(setup.inputs[0].shape.NumElements()) {
    if (std::is_integral_v<T> && (kind_ == ScalarOpKind::kDiv || kind_ == ScalarOpKind::kRDiv)) {
      throw std::invalid_argument(fmt::format("[scalar] '{}': integer division has no CUDA kernel (a zero divisor must "
                                              "fail the call); place it on the CPU", setup.op_name));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &ScalarKernel<T>, kind_, value_, inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  ScalarOpKind kind_;
  T value_;
  std::int64_t count_;
};

// Inputs (dy, x).
template <typename T> class ScalarGradCuda final : public Kernel {
 public:
  explicit ScalarGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<ScalarAttrs>().kind),
        value_(static_cast<T>(setup.Get<ScalarAttrs>().value)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &ScalarGradKernel<T>, kind_, value_, inputs[0].As<T>(), inputs[1].As<T>(),
                     outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  ScalarOpKind kind_;
  T value_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"scalar_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ScalarGradCuda<float>>);
  RegisterKernel({"scalar_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ScalarGradCuda<double>>);
  RegisterKernel({"scalar", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ScalarCuda<float>>);
  RegisterKernel({"scalar", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ScalarCuda<double>>);
  RegisterKernel({"scalar", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ScalarCuda<std::int32_t>>);
  RegisterKernel({"scalar", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ScalarCuda<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
