// tanh_grad on the CPU: dx = dy · (1 − y²) from tanh's output y (kernels/functors/activation.hpp).
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tanh_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapGradCpu<float, TanhFn>>);
  RegisterKernel({"tanh_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapGradCpu<double, TanhFn>>);
}

}  // namespace
}  // namespace weir::internal
