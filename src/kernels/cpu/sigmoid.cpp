// sigmoid on the CPU (kernels/functors/activation.hpp): exp is only taken of -|x|, so it never
// overflows for large |x|.
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/activation.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MapCpu<float, SigmoidFn>>);
  RegisterKernel({"sigmoid", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MapCpu<double, SigmoidFn>>);
}

}  // namespace
}  // namespace weir::internal
