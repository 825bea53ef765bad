// clip_by_global_norm on CUDA: every gradient's squares added into one double on the device (a block
// sum, then an atomic add per block), then each gradient scaled by clip_norm / max(global_norm,
// clip_norm), as the CPU kernel does. The norm is read on the device: no copy back to the host.
#include <cstdint>

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

template <typename T> __global__ void AddSquaresKernel(const T* x, std::int64_t count, double* square_sum) {
  double sum = 0;
  WEIR_FOR_EACH_ELEMENT(i, count) { sum += static_cast<double>(x[i]) * x[i]; }
  sum = cuda::BlockSum(sum);
  if (threadIdx.x == 0) atomicAdd(square_sum, sum);
}

// y = x · clip / max(scale √(*square_sum), clip).
template <typename T>
__global__ void ScaleByGlobalNormKernel(const T* x, T* y, std::int64_t count, const double* square_sum, double scale,
                                        double clip) {
  const double norm = scale * sqrt(*square_sum);
  const T factor = static_cast<T>(clip / (norm > clip ? norm : clip));
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = x[i] * factor; }
}

class ClipByGlobalNormCuda final : public Kernel {
 public:
  explicit ClipByGlobalNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<ClipByGlobalNormAttrs>()), scratch_(setup.device.index, sizeof(double)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    double* square_sum = scratch_.As<double>();
    cuda::Zero(stream_, square_sum, sizeof(double));
    for (const ConstTensorView& x : inputs) {
      if (x.GetDType() == DType::kF32) AddSquares<float>(x, square_sum);
      else AddSquares<double>(x, square_sum);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].GetDType() == DType::kF32) Scale<float>(inputs[i], outputs[i], square_sum);
      else Scale<double>(inputs[i], outputs[i], square_sum);
    }
  }

 private:
  template <typename T> void AddSquares(const ConstTensorView& x, double* square_sum) {
    cuda::LaunchOver(stream_, x.NumElements(), &AddSquaresKernel<T>, x.As<T>(), x.NumElements(), square_sum);
  }
  template <typename T> void Scale(const ConstTensorView& x, const TensorView& y, const double* square_sum) {
    cuda::LaunchOver(stream_, x.NumElements(), &ScaleByGlobalNormKernel<T>, x.As<T>(), y.As<T>(), x.NumElements(),
                     square_sum, attrs_.gradient_scale, attrs_.clip_norm);
  }

  void* stream_;
  ClipByGlobalNormAttrs attrs_;
  DeviceScratch scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByGlobalNormCuda>);
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByGlobalNormCuda>);
}

}  // namespace
}  // namespace weir::internal
