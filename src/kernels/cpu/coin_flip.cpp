// coin_flip on the host: a Bernoulli draw per example, from a stream of its own per device share.
#include <random>

#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

class CoinFlipCpu final : public Kernel {
 public:
  explicit CoinFlipCpu(const KernelSetup& setup)
      : flip_(setup.Get<CoinFlipAttrs>().probability),
        rng_(setup.Get<CoinFlipAttrs>().seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(setup.shard + 1))) {}

  void Run(std::span<const ConstTensorView> /*inputs*/, std::span<const TensorView> outputs) override {
    auto* out = outputs[0].As<std::int8_t>();
    for (std::int64_t i = 0; i < outputs[0].NumElements(); ++i) out[i] = flip_(rng_) ? 1 : 0;
  }

 private:
  std::bernoulli_distribution flip_;
  std::mt19937_64 rng_;
};

WEIR_REGISTER_KERNELS { RegisterKernel({"coin_flip", Device::Kind::kCpu, DType::kI8}, &MakeKernel<CoinFlipCpu>); }

}  // namespace
}  // namespace weir::internal
