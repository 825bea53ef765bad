// reshape on the CPU: row-major order is unchanged, so a byte copy, for every dtype.
#include <cstring>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class ReshapeCpu final : public Kernel {
 public:
  explicit ReshapeCpu(const KernelSetup& setup) : num_bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    // The planner may hand the output the input's own slot; memcpy onto itself is undefined.
    if (num_bytes_ != 0 && outputs[0].data != inputs[0].data) std::memcpy(outputs[0].data, inputs[0].data, num_bytes_);
  }

 private:
  std::size_t num_bytes_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    RegisterKernel({"reshape", Device::Kind::kCpu, dtype}, &MakeKernel<ReshapeCpu>);
  }
}

}  // namespace
}  // namespace weir::internal
