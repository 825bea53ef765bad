// compare on the CPU: kernels/functors/compare.hpp's comparison, chosen from the attrs when the task
// is created, in the broadcasting loop of broadcast_binary.hpp.
#include <cstdint>

#include "kernels/cpu/broadcast_binary.hpp"
#include "kernels/functors/compare.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> std::unique_ptr<Kernel> MakeCompare(const KernelSetup& setup) {
  return WithCompareOp(setup.Get<CompareAttrs>().kind, [&](auto op) -> std::unique_ptr<Kernel> {
    return std::make_unique<BroadcastBinaryCpu<T, decltype(op), std::int8_t>>(setup);
  });
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kF32}, &MakeCompare<float>);
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kF64}, &MakeCompare<double>);
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kI32}, &MakeCompare<std::int32_t>);
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kI64}, &MakeCompare<std::int64_t>);
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kU8}, &MakeCompare<std::uint8_t>);
  RegisterKernel({"compare", Device::Kind::kCpu, DType::kI8}, &MakeCompare<std::int8_t>);
}

}  // namespace
}  // namespace weir::internal
