// relu on the CPU: std::max(x, 0) (kernels/functors/activation.hpp, which the CUDA kernel shares), a
// vectorised loop split over the intra-op pool when large.
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapCpu<float, ReluFn>>);
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapCpu<double, ReluFn>>);
}

}  // namespace
}  // namespace weir::internal
