// add, sub, mul, div, mod, pow, maximum and minimum on CUDA with numpy broadcasting: the functors and the
// broadcast plan of kernels/functors/binary.hpp (the CPU kernels') through one launcher. Integer
// division stays on the CPU, where a zero divisor fails the call.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T, cuda::Binary kKind> class BinaryCuda final : public Kernel {
 public:
  explicit BinaryCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(BinaryPlanOf(setup)),
        count_(setup.outputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::BroadcastBinary<T>(stream_, kKind, plan_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  BroadcastPlan plan_;
  std::int64_t count_;
};

template <cuda::Binary kKind> void Register(const char* op, bool integers) {
  RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<BinaryCuda<float, kKind>>);
  RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<BinaryCuda<double, kKind>>);
  if (!integers) return;
  RegisterKernel({op, Device::Kind::kCuda, DType::kI32}, &MakeKernel<BinaryCuda<std::int32_t, kKind>>);
  RegisterKernel({op, Device::Kind::kCuda, DType::kI64}, &MakeKernel<BinaryCuda<std::int64_t, kKind>>);
  RegisterKernel({op, Device::Kind::kCuda, DType::kI8}, &MakeKernel<BinaryCuda<std::int8_t, kKind>>);
}

WEIR_REGISTER_KERNELS {
  Register<cuda::Binary::kAdd>("add", true);
  // Mixed precision sums the gradients of 16-bit values.
  RegisterKernel({"add", Device::Kind::kCuda, DType::kF16}, &MakeKernel<BinaryCuda<float16, cuda::Binary::kAdd>>);
  RegisterKernel({"add", Device::Kind::kCuda, DType::kBF16}, &MakeKernel<BinaryCuda<bfloat16, cuda::Binary::kAdd>>);
  Register<cuda::Binary::kSub>("sub", true);
  Register<cuda::Binary::kMul>("mul", true);
  Register<cuda::Binary::kDiv>("div", false);
  Register<cuda::Binary::kMod>("mod", false);
  Register<cuda::Binary::kPow>("pow", false);
  Register<cuda::Binary::kMaximum>("maximum", true);
  Register<cuda::Binary::kMinimum>("minimum", true);
}

}  // namespace
}  // namespace weir::internal
