// dropout on the CPU. Each task owns a random stream seeded from the options, so a seeded job
// draws the same masks call after call, across sessions.
#include <random>

#include "kernels/kernel.hpp"
#include "kernels/attrs/dropout_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class DropoutCpu final : public Kernel {
 public:
  explicit DropoutCpu(const KernelSetup& setup)
      : rate_(setup.Get<DropoutAttrs>().rate), random_(setup.Get<DropoutAttrs>().seed) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    std::uint8_t* mask = outputs[1].As<std::uint8_t>();
    const T scale = static_cast<T>(1.0 / (1.0 - rate_));
    // Compare raw 64-bit draws with a threshold: portable (no std distribution) and branch-light.
    const auto threshold = static_cast<std::uint64_t>(rate_ * 18446744073709551615.0);
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) {
      mask[i] = random_() >= threshold ? 1 : 0;
      y[i] = mask[i] ? x[i] * scale : T(0);
    }
  }

 private:
  double rate_;
  std::mt19937_64 random_;
};

template <typename T> class DropoutGradCpu final : public Kernel {
 public:
  explicit DropoutGradCpu(const KernelSetup& setup) : scale_(static_cast<T>(1.0 / (1.0 - setup.Get<DropoutAttrs>().rate))) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const std::uint8_t* mask = inputs[1].As<std::uint8_t>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) dx[i] = mask[i] ? dy[i] * scale_ : T(0);
  }

 private:
  T scale_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"dropout", Device::Kind::kCpu, DType::kF32}, &MakeKernel<DropoutCpu<float>>);
  RegisterKernel({"dropout", Device::Kind::kCpu, DType::kF64}, &MakeKernel<DropoutCpu<double>>);
  RegisterKernel({"dropout_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<DropoutGradCpu<float>>);
  RegisterKernel({"dropout_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<DropoutGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
