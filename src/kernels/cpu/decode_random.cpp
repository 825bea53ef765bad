// decode_random on the host: a fresh draw each call (the variable initializers' distributions),
// seeded by (seed, device share, call) so that a run repeats.
#include <memory>

#include "kernels/data/random_fill.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

class DecodeRandomCpu final : public Kernel {
 public:
  explicit DecodeRandomCpu(const KernelSetup& setup)
      : init_(DecodeRandomInitializer(setup.Get<DecodeRandomAttrs>())),
        seed_(setup.Get<DecodeRandomAttrs>().seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(setup.shard + 1))) {}

  void Run(std::span<const ConstTensorView> /*inputs*/, std::span<const TensorView> outputs) override {
    // Drawn straight into the register slot (a tensor that does not own it): no batch-sized allocation a call.
    Tensor slot(outputs[0].GetShape(), outputs[0].GetDType(), Device::Cpu(),
                std::shared_ptr<std::byte[]>(std::shared_ptr<std::byte[]>(), static_cast<std::byte*>(outputs[0].data)));
    InitializeInto(init_, slot, seed_ + 0x632be59bd9b4e019ULL * call_++);
  }

 private:
  Initializer init_;
  std::uint64_t seed_;
  std::uint64_t call_ = 0;
};

WEIR_REGISTER_KERNELS {
  for (const DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kI32, DType::kI64, DType::kU8, DType::kI8}) {
    RegisterKernel({"decode_random", Device::Kind::kCpu, dtype}, &MakeKernel<DecodeRandomCpu>);
  }
}

}  // namespace
}  // namespace weir::internal
