// assign on CUDA: the value's bytes into the variable on the device, in place, for every dtype.
#include "kernels/cuda/cuda_kernel.hpp"

namespace weir::internal {
namespace {

class AssignCuda final : public Kernel {
 public:
  explicit AssignCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    cuda::CopyOnDevice(stream_, const_cast<void*>(inputs[0].data), inputs[1].data, bytes_);  // (nothing when they are one)
  }

 private:
  void* stream_;
  std::size_t bytes_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"assign", Device::Kind::kCuda, dtype}, &MakeKernel<AssignCuda>);
}

}  // namespace
}  // namespace weir::internal
