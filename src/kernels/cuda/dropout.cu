// dropout and dropout_grad on CUDA: the CPU kernel's counter-based masks (Philox4x32 per element and
// call, kernels/functors/philox.hpp), so both devices draw the same mask for the same seed and call.
// The call count lives on the device and advances on the stream, so a CUDA graph replays it right.
#include <cstdint>

#include "kernels/attrs/dropout_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/philox.hpp"

namespace weir::internal {
namespace {

// mask[i] = DropoutKeeps(seed, *calls, i, threshold), y = mask ? x · scale : 0; the call number read
// on the device, so that a CUDA graph's replays draw new masks.
template <typename T>
__global__ void DropoutKernel(const T* x, T* y, std::uint8_t* mask, std::int64_t count, std::uint64_t seed,
                              const std::int64_t* calls, std::uint64_t threshold, T scale) {
  const auto call = static_cast<std::uint64_t>(*calls);
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const bool keep = DropoutKeeps(seed, call, static_cast<std::uint64_t>(i), threshold);
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * scale : T(0);
  }
}

template <typename T>
__global__ void DropoutGradKernel(const T* dy, const std::uint8_t* mask, T* dx, std::int64_t count, T scale) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = mask[i] ? dy[i] * scale : T(0); }
}

// What dropout and its gradient share: the rate's threshold and scale.
template <typename T> struct DropoutConstants {
  explicit DropoutConstants(const DropoutAttrs& attrs)
      : threshold(static_cast<std::uint64_t>(attrs.rate * 18446744073709551615.0)),
        scale(static_cast<T>(1.0 / (1.0 - attrs.rate))) {}
  std::uint64_t threshold;
  T scale;
};

template <typename T> class DropoutCuda final : public Kernel {
 public:
  explicit DropoutCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), seed_(setup.Get<DropoutAttrs>().seed), constants_(setup.Get<DropoutAttrs>()),
        count_(setup.inputs[0].shape.NumElements()), calls_(setup.device.index, sizeof(std::int64_t)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    std::int64_t* calls = calls_.As<std::int64_t>();
    cuda::LaunchOver(stream_, count_, &DropoutKernel<T>, inputs[0].As<T>(), outputs[0].As<T>(), outputs[1].As<std::uint8_t>(),
                     count_, seed_, calls, constants_.threshold, constants_.scale);
    cuda::Increment(stream_, calls);  // the next Run's call number, after this Run's draw
  }

 private:
  void* stream_;
  std::uint64_t seed_;
  DropoutConstants<T> constants_;
  std::int64_t count_;
  DeviceScratch calls_;  // the Runs so far (an int64 on the device, zero to start with)
};

// Inputs (dy, mask).
template <typename T> class DropoutGradCuda final : public Kernel {
 public:
  explicit DropoutGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), constants_(setup.Get<DropoutAttrs>()), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &DropoutGradKernel<T>, inputs[0].As<T>(), inputs[1].As<std::uint8_t>(),
                     outputs[0].As<T>(), count_, constants_.scale);
  }

 private:
  void* stream_;
  DropoutConstants<T> constants_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"dropout", Device::Kind::kCuda, DType::kF32}, &MakeKernel<DropoutCuda<float>>);
  RegisterKernel({"dropout", Device::Kind::kCuda, DType::kF64}, &MakeKernel<DropoutCuda<double>>);
  RegisterKernel({"dropout_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<DropoutGradCuda<float>>);
  RegisterKernel({"dropout_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<DropoutGradCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
