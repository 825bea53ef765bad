// cast on CUDA: kernels/functors/cast.hpp (the CPU kernel's conversion) for each (input, output)
// dtype pair, picked when the task is created.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename In, typename Out> class CastCuda final : public Kernel {
 public:
  explicit CastCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Cast<In, Out>(stream_, inputs[0].As<In>(), outputs[0].As<Out>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
};

template <typename In> std::unique_ptr<Kernel> MakeCast(const KernelSetup& setup) {
  switch (setup.Get<CastAttrs>().dtype) {
    case DType::kF32: return std::make_unique<CastCuda<In, float>>(setup);
    case DType::kF64: return std::make_unique<CastCuda<In, double>>(setup);
    case DType::kI32: return std::make_unique<CastCuda<In, std::int32_t>>(setup);
    case DType::kI64: return std::make_unique<CastCuda<In, std::int64_t>>(setup);
    case DType::kU8: return std::make_unique<CastCuda<In, std::uint8_t>>(setup);
    case DType::kI8: return std::make_unique<CastCuda<In, std::int8_t>>(setup);
    case DType::kBool: return std::make_unique<CastCuda<In, bool>>(setup);
  }
  return nullptr;  // unreachable: the switch covers every dtype
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kF32}, &MakeCast<float>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kF64}, &MakeCast<double>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kI32}, &MakeCast<std::int32_t>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kI64}, &MakeCast<std::int64_t>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kU8}, &MakeCast<std::uint8_t>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kI8}, &MakeCast<std::int8_t>);
  RegisterKernel({"cast", Device::Kind::kCuda, DType::kBool}, &MakeCast<bool>);
}

}  // namespace
}  // namespace weir::internal
