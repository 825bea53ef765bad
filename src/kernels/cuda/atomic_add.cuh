#pragma once
// Atomic adds of the element types that the scatter kernels sum into (unsorted_segment_sum, the
// scatter_nd family): each data element added into its place by its own thread. Integer sums match the
// CPU exactly; floating sums up to the order of the additions, which the atomics leave open.
#include <cstdint>

namespace weir::internal::cuda {

__device__ inline void AtomicAdd(float* to, float value) { atomicAdd(to, value); }
__device__ inline void AtomicAdd(double* to, double value) { atomicAdd(to, value); }
__device__ inline void AtomicAdd(std::int32_t* to, std::int32_t value) { atomicAdd(reinterpret_cast<int*>(to), value); }
// Two's complement: adding the bits as unsigned adds the signed values.
__device__ inline void AtomicAdd(std::int64_t* to, std::int64_t value) {
  atomicAdd(reinterpret_cast<unsigned long long*>(to), static_cast<unsigned long long>(value));
}

}  // namespace weir::internal::cuda
