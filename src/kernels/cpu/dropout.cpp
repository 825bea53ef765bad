// dropout on the CPU. The mask of element i in a task's n-th call is Philox4x32's draw for
// (seed, n, i) (kernels/functors/philox.hpp, which the CUDA kernel draws the same way), so a seeded
// job draws the same masks call after call, across sessions and devices, and the draws split over the
// intra-op pool (f32 in vector/dropout_f32.hpp's vectorized loop).
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/vector/dropout_f32.hpp"
#include "kernels/kernel.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "kernels/functors/philox.hpp"

namespace weir::internal {
namespace {

template <typename T> class DropoutCpu final : public Kernel {
 public:
  explicit DropoutCpu(const KernelSetup& setup)
      : rate_(setup.Get<DropoutAttrs>().rate), seed_(setup.Get<DropoutAttrs>().seed) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    std::uint8_t* mask = outputs[1].As<std::uint8_t>();
    const T scale = static_cast<T>(1.0 / (1.0 - rate_));
    // Compare raw 64-bit draws with a threshold: portable (no std distribution) and branch-light.
    const auto threshold = static_cast<std::uint64_t>(rate_ * 18446744073709551615.0);
    const std::int64_t count = inputs[0].NumElements();
    const std::uint64_t call = calls_++;
    // Each draw depends on (seed, call, i) only, so ranges run on the intra-op pool in any order.
    ForEachRange(count, [&](std::int64_t begin, std::int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        DropoutF32(x, y, mask, begin, end, seed_, call, threshold, scale);
      } else {
        for (std::int64_t i = begin; i < end; ++i) {
          mask[i] = DropoutKeeps(seed_, call, static_cast<std::uint64_t>(i), threshold) ? 1 : 0;
          y[i] = mask[i] ? x[i] * scale : T(0);
        }
      }
    });
  }

 private:
  double rate_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};

template <typename T> class DropoutGradCpu final : public Kernel {
 public:
  explicit DropoutGradCpu(const KernelSetup& setup) : scale_(static_cast<T>(1.0 / (1.0 - setup.Get<DropoutAttrs>().rate))) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const std::uint8_t* mask = inputs[1].As<std::uint8_t>();
    T* dx = outputs[0].As<T>();
    ForEachRange(inputs[0].NumElements(), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const T scaled = dy[i] * scale_;  // loaded unconditionally, so that the select vectorizes
        dx[i] = mask[i] ? scaled : T(0);
      }
    });
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
