// increment on the CPU: the counter input is written in place.
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class IncrementCpu final : public Kernel {
 public:
  explicit IncrementCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    ++const_cast<std::int64_t*>(inputs[0].As<std::int64_t>())[0];
  }
};

WEIR_REGISTER_KERNELS { RegisterKernel({"increment", Device::Kind::kCpu, DType::kI64}, &MakeKernel<IncrementCpu>); }

}  // namespace
}  // namespace weir::internal
