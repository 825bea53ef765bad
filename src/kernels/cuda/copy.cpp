// identity, reshape, constant and increment on CUDA: copies and the train step's increment on the
// device stream (kernels/cuda/copy.cu).
#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

// identity and reshape: the input's bytes unchanged (row-major order is the same).
class ByteCopyCuda final : public Kernel {
 public:
  explicit ByteCopyCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::CopyOnDevice(stream_, outputs[0].data, inputs[0].data, bytes_);
  }

 private:
  void* stream_;
  std::size_t bytes_;
};

// A constant is copied to each output slot once (a slot keeps it across calls), as on the CPU.
class ConstantCuda final : public Kernel {
 public:
  explicit ConstantCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), value_(setup.Get<Tensor>()) {}
  void Run(std::span<const ConstTensorView>, std::span<const TensorView> outputs) override {
    for (const void* filled : filled_slots_) {
      if (filled == outputs[0].data) return;
    }
    cuda::CopyFromHost(stream_, outputs[0].data, value_.RawData(), value_.NumBytes());
    filled_slots_.push_back(outputs[0].data);
  }

 private:
  void* stream_;
  Tensor value_;  // host memory, alive as long as the kernel
  std::vector<const void*> filled_slots_;
};

class IncrementCuda final : public Kernel {
 public:
  explicit IncrementCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    cuda::Increment(stream_, const_cast<std::int64_t*>(inputs[0].As<std::int64_t>()));
  }

 private:
  void* stream_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    RegisterKernel({"identity", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda>);
    RegisterKernel({"reshape", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda>);
    RegisterKernel({"constant", Device::Kind::kCuda, dtype}, &MakeKernel<ConstantCuda>);
  }
  RegisterKernel({"increment", Device::Kind::kCuda, DType::kI64}, &MakeKernel<IncrementCuda>);
}

}  // namespace
}  // namespace weir::internal
