// fake_quantization on the CPU: x seen as (channels, inner), each channel through its grid
// (kernels/functors/fake_quantization.hpp); one channel when quantized per layer.
#include <cstdint>

#include "kernels/functors/fake_quantization.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class FakeQuantizationCpu final : public Kernel {
 public:
  explicit FakeQuantizationCpu(const KernelSetup& setup)
      : channels_(setup.inputs[1].shape.NumElements()),
        inner_(channels_ == 0 ? 0 : setup.inputs[0].shape.NumElements() / channels_),
        bits_(setup.Get<FakeQuantizationAttrs>().quantization_bit),
        affine_(setup.Get<FakeQuantizationAttrs>().scheme == QuantizationScheme::kAffine),
        cambricon_(setup.Get<FakeQuantizationAttrs>().formula == QuantizationFormula::kCambricon) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    const T* scale = inputs[1].As<T>();
    const T* zero_point = inputs[2].As<T>();
    T* y = outputs[0].As<T>();
    for (std::int64_t c = 0; c < channels_; ++c) {
      const QuantizationGrid<T> grid = MakeQuantizationGrid(scale[c], zero_point[c], bits_, affine_, cambricon_);
      const std::int64_t begin = c * inner_;
      for (std::int64_t i = begin; i < begin + inner_; ++i) y[i] = grid(x[i]);
    }
  }

 private:
  std::int64_t channels_;
  std::int64_t inner_;
  int bits_;
  bool affine_;
  bool cambricon_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"fake_quantization", Device::Kind::kCpu, DType::kF32}, &MakeKernel<FakeQuantizationCpu<float>>);
  RegisterKernel({"fake_quantization", Device::Kind::kCpu, DType::kF64}, &MakeKernel<FakeQuantizationCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
