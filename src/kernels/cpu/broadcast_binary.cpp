// add, sub, mul, div, mod, pow, maximum, minimum on the CPU with numpy broadcasting: the math of
// kernels/functors/binary.hpp (the CUDA kernels' too) in the broadcasting loop of broadcast_binary.hpp.
#include <cstdint>
#include <memory>

#include "kernels/cpu/arithmetic.hpp"
#include "kernels/cpu/broadcast_binary.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/vector/bfloat16_f32.hpp"

namespace weir::internal {
namespace {

// Integer division fails the call on a zero divisor (kernels/cpu/arithmetic.hpp).
struct DivOp {
  template <typename T> static T Apply(T a, T b) { return ArithDiv(a, b, "div"); }
};

struct FloorModOp {
  template <typename T> static T Apply(T a, T b) { return ArithFloorMod(a, b, "mod"); }
};

// bf16 sums of equal shapes (mixed precision's residual connections, and gradients summed where a
// value has several readers) add widened blocks over the intra-op pool, rounding each sum once;
// other layouts convert element by element.
class AddBFloat16Cpu final : public Kernel {
 public:
  explicit AddBFloat16Cpu(const KernelSetup& setup) : count_(setup.outputs[0].shape.NumElements()) {
    if (setup.inputs[0].shape.NumElements() != count_ || setup.inputs[1].shape.NumElements() != count_) {
      broadcast_ = std::make_unique<BroadcastBinaryCpu<bfloat16, AddOp>>(setup);
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (broadcast_) return broadcast_->Run(inputs, outputs);
    const bfloat16* a = inputs[0].As<bfloat16>();
    const bfloat16* b = inputs[1].As<bfloat16>();
    bfloat16* y = outputs[0].As<bfloat16>();
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
      OverWidenedBlocks<2>({a, b}, y, begin, end, [](const auto& in, float* out, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) out[i] = in[0][i] + in[1][i];
      });
    });
  }

 private:
  std::int64_t count_;
  std::unique_ptr<Kernel> broadcast_;
};

template <typename Op> void RegisterBinary(const char* op_type) {
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF32}, &MakeKernel<BroadcastBinaryCpu<float, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF64}, &MakeKernel<BroadcastBinaryCpu<double, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI32}, &MakeKernel<BroadcastBinaryCpu<std::int32_t, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI64}, &MakeKernel<BroadcastBinaryCpu<std::int64_t, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI8}, &MakeKernel<BroadcastBinaryCpu<std::int8_t, Op>>);
}

WEIR_REGISTER_KERNELS {
  RegisterBinary<AddOp>("add");
  // Mixed precision sums gradients of float16/bfloat16 values (in float, rounded once per element).
  RegisterKernel({"add", Device::Kind::kCpu, DType::kF16}, &MakeKernel<BroadcastBinaryCpu<float16, AddOp>>);
  RegisterKernel({"add", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<AddBFloat16Cpu>);
  RegisterBinary<SubOp>("sub");
  RegisterBinary<MulOp>("mul");
  RegisterBinary<DivOp>("div");
  RegisterBinary<FloorModOp>("mod");
  RegisterKernel({"pow", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BroadcastBinaryCpu<float, PowOp>>);
  RegisterKernel({"pow", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BroadcastBinaryCpu<double, PowOp>>);
  RegisterBinary<MaximumOp>("maximum");
  RegisterBinary<MinimumOp>("minimum");
}

}  // namespace
}  // namespace weir::internal
