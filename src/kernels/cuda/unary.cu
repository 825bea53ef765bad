// unary and unary_grad on CUDA: a grid-stride loop over the kind's functor of
// kernels/functors/unary.hpp, the math the CPU kernels run.
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/unary.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Fn> __global__ void UnaryKernel(const T* x, T* y, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = Fn::template Fwd<T>(x[i]); }
}
// dx = f'(v) dy, v being y or x as the kind's gradient reads.
template <typename T, typename Fn> __global__ void UnaryGradKernel(const T* dy, const T* v, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = Fn::template Grad<T>(v[i], dy[i]); }
}

template <typename T> class UnaryCuda final : public Kernel {
 public:
  explicit UnaryCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<UnaryAttrs>().kind), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    VisitUnaryKind(kind_, [&]<typename Fn>() {
      // Shape inference admits integers only for the kinds that take them.
      if constexpr (std::is_integral_v<T> && !Fn::kTakesIntegers) {
        throw std::invalid_argument("[unary] this kind has no integer kernel");
      } else {
        cuda::LaunchOver(stream_, count_, &UnaryKernel<T, Fn>, inputs[0].As<T>(), outputs[0].As<T>(), count_);
      }
    });
  }

 private:
  void* stream_;
  UnaryOpKind kind_;
  std::int64_t count_;
};

// Inputs (dy, v).
template <typename T> class UnaryGradCuda final : public Kernel {
 public:
  explicit UnaryGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<UnaryAttrs>().kind), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    VisitUnaryKind(kind_, [&]<typename Fn>() {
      cuda::LaunchOver(stream_, count_, &UnaryGradKernel<T, Fn>, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(),
                       count_);
    });
  }

 private:
  void* stream_;
  UnaryOpKind kind_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kF32}, &MakeKernel<UnaryCuda<float>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kF64}, &MakeKernel<UnaryCuda<double>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kI32}, &MakeKernel<UnaryCuda<std::int32_t>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kI64}, &MakeKernel<UnaryCuda<std::int64_t>>);
  RegisterKernel({"unary_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<UnaryGradCuda<float>>);
  RegisterKernel({"unary_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<UnaryGradCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
