// The generic elementwise launchers that several ops' kernels share: binary maps with broadcasting
// (add, bias_add, the fused matmul and conv2d epilogues) and the fused epilogues' relu, grid-stride
// loops over the functors of kernels/functors/ (the CPU kernels' math), instantiated per kind and dtype.
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/functors/activation.hpp"
#include "kernels/functors/binary.hpp"
#include "weir/half.hpp"

namespace weir::internal::cuda {

namespace {

template <typename T> __global__ void ReluKernel(const T* x, T* y, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = ReluFn::Fwd(x[i]); }
}

template <typename T, typename Op>
__global__ void BinaryKernel(BroadcastPlan plan, const T* a, const T* b, T* out, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    std::int64_t ia = i, ib = i;  // rank 0: both operands have the output's layout
    if (plan.rank > 0) plan.Offsets(i, ia, ib);
    out[i] = Op::template Apply<T>(a[ia], b[ib]);
  }
}

template <typename T, typename Op>
void LaunchBinary(void* stream, const BroadcastPlan& plan, const T* a, const T* b, T* out, std::int64_t count) {
  LaunchOver(stream, count, &BinaryKernel<T, Op>, plan, a, b, out, count);
}

}  // namespace

template <typename T>
void BroadcastBinary(void* stream, Binary kind, const BroadcastPlan& plan, const T* a, const T* b, T* out,
                     std::int64_t count) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    // 16-bit values are mixed precision's: only their gradients are summed.
    if (kind != Binary::kAdd) throw std::invalid_argument("[binary] float16 and bfloat16 have a CUDA kernel for add only");
    return LaunchBinary<T, AddOp>(stream, plan, a, b, out, count);
  } else {
    switch (kind) {
      case Binary::kAdd: return LaunchBinary<T, AddOp>(stream, plan, a, b, out, count);
      case Binary::kSub: return LaunchBinary<T, SubOp>(stream, plan, a, b, out, count);
      case Binary::kMul: return LaunchBinary<T, MulOp>(stream, plan, a, b, out, count);
      case Binary::kDiv:
        if constexpr (std::is_integral_v<T>) {
          throw std::invalid_argument("[div] integer division has no CUDA kernel (a zero divisor must fail the call)");
        } else {
          return LaunchBinary<T, FloatDivOp>(stream, plan, a, b, out, count);
        }
      case Binary::kMod:
        if constexpr (std::is_integral_v<T>) {
          throw std::invalid_argument("[mod] integer modulo has no CUDA kernel (a zero divisor must fail the call)");
        } else {
          return LaunchBinary<T, FloatFloorModOp>(stream, plan, a, b, out, count);
        }
      case Binary::kPow:
        if constexpr (std::is_integral_v<T>) {
          throw std::invalid_argument("[pow] has CUDA kernels for floating dtypes only");
        } else {
          return LaunchBinary<T, PowOp>(stream, plan, a, b, out, count);
        }
      case Binary::kMaximum: return LaunchBinary<T, MaximumOp>(stream, plan, a, b, out, count);
      case Binary::kMinimum: return LaunchBinary<T, MinimumOp>(stream, plan, a, b, out, count);
    }
  }
}

template <typename T> void Relu(void* stream, const T* x, T* y, std::int64_t count) {
  LaunchOver(stream, count, &ReluKernel<T>, x, y, count);
}

#define WEIR_INSTANTIATE(T) \
  template void BroadcastBinary<T>(void*, Binary, const BroadcastPlan&, const T*, const T*, T*, std::int64_t);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
WEIR_INSTANTIATE(std::int32_t)
WEIR_INSTANTIATE(std::int64_t)
WEIR_INSTANTIATE(std::int8_t)
WEIR_INSTANTIATE(float16)
WEIR_INSTANTIATE(bfloat16)
#undef WEIR_INSTANTIATE
template void Relu<float>(void*, const float*, float*, std::int64_t);
template void Relu<double>(void*, const double*, double*, std::int64_t);

}  // namespace weir::internal::cuda
