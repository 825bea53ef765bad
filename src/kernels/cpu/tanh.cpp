// tanh on the CPU: std::tanh, which saturates to ±1 without overflow (kernels/functors/activation.hpp).
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tanh", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapCpu<float, TanhFn>>);
  RegisterKernel({"tanh", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapCpu<double, TanhFn>>);
}

}  // namespace
}  // namespace weir::internal
