#pragma once
// A kernel that copies its input's bytes unchanged: identity, and reshape (row-major order is the
// same before and after).
#include <cstring>

#include "kernels/axis_split.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

class ByteCopyCpu final : public Kernel {
 public:
  explicit ByteCopyCpu(const KernelSetup& setup) : num_bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    // The planner may hand the output the input's own slot; memcpy onto itself is undefined.
    if (num_bytes_ != 0 && outputs[0].data != inputs[0].data) std::memcpy(outputs[0].data, inputs[0].data, num_bytes_);
  }

 private:
  std::size_t num_bytes_;
};

/// Registers ByteCopyCpu for `op_type` and every dtype.
inline void RegisterByteCopy(const char* op_type) {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({op_type, Device::Kind::kCpu, dtype}, &MakeKernel<ByteCopyCpu>);
  }
}

}  // namespace weir::internal
