// dropout and dropout_grad on CUDA: the CPU kernel's counter-based masks (Philox4x32 per element and
// call, kernels/functors/philox.hpp), so both devices draw the same mask for the same seed and call.
// The call count lives on the device and advances on the stream, so a CUDA graph replays it right.
#include <cstdint>

#include "kernels/attrs/dropout_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class DropoutCuda final : public Kernel {
 public:
  explicit DropoutCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "dropout_grad"), seed_(setup.Get<DropoutAttrs>().seed),
        threshold_(static_cast<std::uint64_t>(setup.Get<DropoutAttrs>().rate * 18446744073709551615.0)),
        scale_(static_cast<T>(1.0 / (1.0 - setup.Get<DropoutAttrs>().rate))), count_(setup.inputs[0].shape.NumElements()),
        calls_(setup.device.index, sizeof(std::int64_t)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {  // inputs (dy, mask)
      cuda::DropoutGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<std::uint8_t>(), outputs[0].As<T>(), count_, scale_);
      return;
    }
    std::int64_t* calls = calls_.As<std::int64_t>();
    cuda::Dropout<T>(stream_, inputs[0].As<T>(), outputs[0].As<T>(), outputs[1].As<std::uint8_t>(), count_, seed_, calls,
                     threshold_, scale_);
    cuda::Increment(stream_, calls);  // the next Run's call number, after this Run's draw
  }

 private:
  void* stream_;
  bool grad_;
  std::uint64_t seed_;
  std::uint64_t threshold_;
  T scale_;
  std::int64_t count_;
  DeviceScratch calls_;  // the Runs so far (an int64 on the device, zero to start with)
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"dropout", "dropout_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<DropoutCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<DropoutCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
