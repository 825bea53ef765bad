// maximum_grad and minimum_grad on CUDA: dy to a where a was picked, else to b
// (kernels/functors/binary.hpp, the CPU kernels' rule); inputs (dy, a, b), outputs (da, db).
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/binary.hpp"

namespace weir::internal {
namespace {

template <typename T, typename PicksA>
__global__ void ExtremumGradKernel(const T* dy, const T* a, const T* b, T* da, T* db, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { ExtremumGrad<PicksA>(dy[i], a[i], b[i], da[i], db[i]); }
}

// PicksA: MaximumPicksA (maximum_grad) or MinimumPicksA (minimum_grad).
template <typename T, typename PicksA> class ExtremumGradCuda final : public Kernel {
 public:
  explicit ExtremumGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &ExtremumGradKernel<T, PicksA>, inputs[0].As<T>(), inputs[1].As<T>(),
                     inputs[2].As<T>(), outputs[0].As<T>(), outputs[1].As<T>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"maximum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ExtremumGradCuda<float, MaximumPicksA>>);
  RegisterKernel({"maximum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ExtremumGradCuda<double, MaximumPicksA>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ExtremumGradCuda<float, MinimumPicksA>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ExtremumGradCuda<double, MinimumPicksA>>);
}

}  // namespace
}  // namespace weir::internal
