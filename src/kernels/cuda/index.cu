// Launchers of the index ops: argmax (a thread per column, kernels/functors/argmax.hpp), one_hot (a
// thread per index, bad indices reported through DeviceReports) and the extremum gradients
// (kernels/functors/binary.hpp).
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/functors/argmax.hpp"
#include "kernels/functors/binary.hpp"

namespace weir::internal::cuda {

namespace {





template <typename T, typename Index>
__global__ void ArgMaxKernel(const T* x, Index* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  WEIR_FOR_EACH_ELEMENT(c, outer * inner) {
    y[c] = static_cast<Index>(ArgMaxAlong(x + (c / inner) * n * inner + c % inner, n, inner));
  }
}

template <typename T, typename PicksA>
__global__ void ExtremumGradKernel(const T* dy, const T* a, const T* b, T* da, T* db, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { internal::ExtremumGrad<PicksA>(dy[i], a[i], b[i], da[i], db[i]); }
}

// The next Run's report slot: stream order puts this after the Run's kernel, in a CUDA graph too.
__global__ void AdvanceReportsKernel(std::uint64_t* counter) { ++*counter; }

template <typename Index, typename T>
__global__ void OneHotKernel(const Index* indices, T* out, std::int64_t count, std::int64_t depth, T on, T off,
                             ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const std::int64_t index = indices[i];
    T* row = out + i * depth;
    for (std::int64_t c = 0; c < depth; ++c) row[c] = c == index ? on : off;
    CheckIndex(i, index, depth, reports);
  }
}


}  // namespace

template <typename T, typename Index>
void ArgMax(void* stream, const T* x, Index* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (outer * inner == 0) return;
  ArgMaxKernel<T, Index><<<Blocks(outer * inner), kThreads, 0, Native(stream)>>>(x, y, outer, n, inner);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ExtremumGrad(void* stream, bool maximum, const T* dy, const T* a, const T* b, T* da, T* db, std::int64_t count) {
  if (count == 0) return;
  if (maximum) {
    ExtremumGradKernel<T, MaximumPicksA><<<Blocks(count), kThreads, 0, Native(stream)>>>(dy, a, b, da, db, count);
  } else {
    ExtremumGradKernel<T, MinimumPicksA><<<Blocks(count), kThreads, 0, Native(stream)>>>(dy, a, b, da, db, count);
  }
  WEIR_CUDA_CHECK(cudaGetLastError());
}

void AdvanceReports(void* stream, const ReportRing& reports) {
  AdvanceReportsKernel<<<1, 1, 0, Native(stream)>>>(reports.counter);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename Index, typename T>
void OneHot(void* stream, const Index* indices, T* out, std::int64_t count, std::int64_t depth, T on, T off,
            ReportRing reports) {
  if (count == 0) return;
  OneHotKernel<Index, T><<<Blocks(count), kThreads, 0, Native(stream)>>>(indices, out, count, depth, on, off, reports);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(T)                                                                                   \
  template void ArgMax<T, std::int32_t>(void*, const T*, std::int32_t*, std::int64_t, std::int64_t, std::int64_t); \
  template void ArgMax<T, std::int64_t>(void*, const T*, std::int64_t*, std::int64_t, std::int64_t, std::int64_t); \
  template void OneHot<std::int32_t, T>(void*, const std::int32_t*, T*, std::int64_t, std::int64_t, T, T, ReportRing); \
  template void OneHot<std::int64_t, T>(void*, const std::int64_t*, T*, std::int64_t, std::int64_t, T, T, ReportRing);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
WEIR_INSTANTIATE(std::int32_t)
WEIR_INSTANTIATE(std::int64_t)
#undef WEIR_INSTANTIATE
template void ExtremumGrad<float>(void*, bool, const float*, const float*, const float*, float*, float*, std::int64_t);
template void ExtremumGrad<double>(void*, bool, const double*, const double*, const double*, double*, double*, std::int64_t);

}  // namespace weir::internal::cuda
