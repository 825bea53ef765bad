// add, sub, mul, div, mod, pow, maximum, minimum on the CPU with numpy broadcasting: the math of
// kernels/functors/binary.hpp (the CUDA kernels' too) in the broadcasting loop of broadcast_binary.hpp.
#include <cstdint>

#include "kernels/cpu/arithmetic.hpp"
#include "kernels/cpu/broadcast_binary.hpp"

namespace weir::internal {
namespace {

// Integer division fails the call on a zero divisor (kernels/cpu/arithmetic.hpp).
struct DivOp {
  template <typename T> static T Apply(T a, T b) { return ArithDiv(a, b, "div"); }
};

struct FloorModOp {
  template <typename T> static T Apply(T a, T b) { return ArithFloorMod(a, b, "mod"); }
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
  RegisterKernel({"add", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<BroadcastBinaryCpu<bfloat16, AddOp>>);
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
