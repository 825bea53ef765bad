// relu_grad on the CPU: dx = dy where y > 0, else 0 (kernels/functors/activation.hpp); one vectorised
// pass (a select, not a branch: see elementwise.hpp), split over the intra-op pool when large.
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapGradCpu<float, ReluFn>>);
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapGradCpu<double, ReluFn>>);
}

}  // namespace
}  // namespace weir::internal
