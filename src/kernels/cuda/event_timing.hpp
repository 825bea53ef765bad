#pragma once
// Timing a library call on a stream, for kernels that choose among candidate algorithms once, when
// they are made (cuDNN's engines, cuBLASLt's matmul algorithms).
#include <cuda_runtime.h>

#include "common/cuda_check.cuh"

namespace weir::internal::cuda {

/// The mean milliseconds of `runs` calls of `run` (which returns whether it succeeded) after one
/// untimed call, between two events on `stream`; -1 where a call or the timing fails.
template <typename Run> float MeanMilliseconds(cudaStream_t stream, Run run, int runs = 3) {
  if (!run()) return -1;
  cudaEvent_t start = nullptr, stop = nullptr;
  WEIR_CUDA_CHECK(cudaEventCreate(&start));
  WEIR_CUDA_CHECK(cudaEventCreate(&stop));
  bool ok = cudaEventRecord(start, stream) == cudaSuccess;
  for (int i = 0; ok && i < runs; ++i) ok = run();
  float milliseconds = -1;
  if (ok && cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
      cudaEventElapsedTime(&milliseconds, start, stop) == cudaSuccess) {
    milliseconds /= static_cast<float>(runs);
  } else {
    milliseconds = -1;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return milliseconds;
}

}  // namespace weir::internal::cuda
