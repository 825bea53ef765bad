// sigmoid_grad on the CPU: dx = dy · y · (1 − y) from sigmoid's output y
// (kernels/functors/activation.hpp).
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapGradCpu<float, SigmoidFn>>);
  RegisterKernel({"sigmoid_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapGradCpu<double, SigmoidFn>>);
}

}  // namespace
}  // namespace weir::internal
