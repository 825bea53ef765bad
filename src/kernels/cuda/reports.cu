// The device half of DeviceReports (kernels/cuda/cuda_kernel.hpp): moving a ring on to the next Run's
// slot.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {
namespace {

// The next Run's report slot: stream order puts this after the Run's kernel, in a CUDA graph too.
__global__ void AdvanceReportsKernel(std::uint64_t* counter) { ++*counter; }

}  // namespace

void AdvanceReports(void* stream, const ReportRing& reports) {
  AdvanceReportsKernel<<<1, 1, 0, Native(stream)>>>(reports.counter);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace weir::internal::cuda
