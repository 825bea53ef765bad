// dropout and dropout_grad on CUDA: the CPU kernel's counter-based masks (Philox4x32 per element and
// call, kernels/functors/philox.hpp), so both devices draw the same mask for the same seed and call.
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
        scale_(static_cast<T>(1.0 / (1.0 - setup.Get<DropoutAttrs>().rate))), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {  // inputs (dy, mask)
      cuda::DropoutGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<std::uint8_t>(), outputs[0].As<T>(), count_, scale_);
      return;
    }
    cuda::Dropout<T>(stream_, inputs[0].As<T>(), outputs[0].As<T>(), outputs[1].As<std::uint8_t>(), count_, seed_, calls_++,
                     threshold_, scale_);
  }
  // The forward's masks depend on the call number, a host counter: a CUDA graph would replay one mask.
  bool Capturable() const override { return grad_; }

 private:
  void* stream_;
  bool grad_;
  std::uint64_t seed_;
  std::uint64_t threshold_;
  T scale_;
  std::int64_t count_;
  std::uint64_t calls_ = 0;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"dropout", "dropout_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<DropoutCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<DropoutCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
