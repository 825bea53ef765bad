// fake_quantization on CUDA: each element finds its channel's grid (kernels/functors/
// fake_quantization.hpp), as the CPU kernel does per channel.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/fake_quantization.hpp"

namespace weir::internal {
namespace {

template <typename T>
__global__ void FakeQuantizationKernel(const T* x, const T* scale, const T* zero_point, T* y, std::int64_t inner,
                                       int bits, bool affine, bool cambricon, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const std::int64_t c = i / inner;
    y[i] = MakeQuantizationGrid(scale[c], zero_point[c], bits, affine, cambricon)(x[i]);
  }
}

template <typename T> class FakeQuantizationCuda final : public Kernel {
 public:
  explicit FakeQuantizationCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        count_(setup.inputs[0].shape.NumElements()),
        inner_(setup.inputs[1].shape.NumElements() == 0 ? 1 : count_ / setup.inputs[1].shape.NumElements()),
        bits_(setup.Get<FakeQuantizationAttrs>().quantization_bit),
        affine_(setup.Get<FakeQuantizationAttrs>().scheme == QuantizationScheme::kAffine),
        cambricon_(setup.Get<FakeQuantizationAttrs>().formula == QuantizationFormula::kCambricon) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (count_ == 0) return;
    cuda::LaunchOver(stream_, count_, &FakeQuantizationKernel<T>, inputs[0].As<T>(), inputs[1].As<T>(),
                     inputs[2].As<T>(), outputs[0].As<T>(), inner_, bits_, affine_, cambricon_, count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
  std::int64_t inner_;
  int bits_;
  bool affine_;
  bool cambricon_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"fake_quantization", Device::Kind::kCuda, DType::kF32}, &MakeKernel<FakeQuantizationCuda<float>>);
  RegisterKernel({"fake_quantization", Device::Kind::kCuda, DType::kF64}, &MakeKernel<FakeQuantizationCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
