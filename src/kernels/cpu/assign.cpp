// assign on the CPU: the value's bytes into the variable, in place, for every dtype.
#include <cstring>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class AssignCpu final : public Kernel {
 public:
  explicit AssignCpu(const KernelSetup& setup) : bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (bytes_ != 0 && inputs[0].data != inputs[1].data) std::memcpy(const_cast<void*>(inputs[0].data), inputs[1].data, bytes_);
  }

 private:
  std::size_t bytes_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"assign", Device::Kind::kCpu, dtype}, &MakeKernel<AssignCpu>);
}

}  // namespace
}  // namespace weir::internal
