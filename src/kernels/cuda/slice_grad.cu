// slice_grad's launcher (kernels/cuda/slice_grad.cpp declares it): each element of dy written to dx
// at its place in the slice's strided view, whose walk is a gather plan (kernels/functors/binary.hpp).
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/binary.hpp"

namespace weir::internal::cuda {

namespace {

template <typename T> __global__ void SliceScatterKernel(BroadcastPlan plan, const T* dy, T* dx, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    std::int64_t to = i, unused = 0;
    if (plan.rank > 0) plan.Offsets(i, to, unused);
    dx[to] = dy[i];
  }
}

}  // namespace

template <typename T> void SliceScatter(void* stream, const BroadcastPlan& plan, const T* dy, T* dx, std::int64_t count) {
  if (count == 0) return;
  SliceScatterKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, dy, dx, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void SliceScatter<std::uint32_t>(void*, const BroadcastPlan&, const std::uint32_t*, std::uint32_t*, std::int64_t);
template void SliceScatter<std::uint64_t>(void*, const BroadcastPlan&, const std::uint64_t*, std::uint64_t*, std::int64_t);

}  // namespace weir::internal::cuda
