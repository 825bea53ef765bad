#pragma once
// float16/bfloat16 ops on the CPU through their float32 kernels (widened.cpp says how and why).
#include <memory>
#include <string_view>

#include "kernels/kernel.hpp"

namespace weir::internal {

/// Whether op_type on `dtype` tensors runs on the CPU through its float32 kernel: dtype is float16 or
/// bfloat16, the op has no CPU kernel of its own for it, and has one for float32.
bool RunsWidenedOnCpu(std::string_view op_type, DType dtype);

/// The kernel factory for such an op: it widens the 16-bit inputs, runs the float32 kernel (found by
/// setup.op_type) and rounds the 16-bit outputs back. Other inputs and outputs pass as they are.
std::unique_ptr<Kernel> MakeWidenedKernel(const KernelSetup& setup);

/// Whether oneDNN runs the 16-bit tensors of `setup` on this CPU (DnnlRunsBFloat16 for bf16).
bool DnnlRunsHalfTensorsOf(const KernelSetup& setup);

/// The factory of a oneDNN kernel registered for bf16: kNative where oneDNN runs bf16 on this CPU, else
/// the op's float32 kernel widened (MakeWidenedKernel), so that bf16 products also run on CPUs without
/// AVX512. Only for ops that write none of their 16-bit inputs in place (the widened copy would be written).
template <KernelFactory kNative> std::unique_ptr<Kernel> NativeOrWidened(const KernelSetup& setup) {
  return DnnlRunsHalfTensorsOf(setup) ? kNative(setup) : MakeWidenedKernel(setup);
}

}  // namespace weir::internal
