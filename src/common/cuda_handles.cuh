#pragma once
// The library handles of a CUDA device stream (common/cuda_stream.cu makes them with the stream,
// bound to it, and destroys them with it): kernels find them by the stream they launch on.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace weir::internal {

/// The cuBLAS handle bound to `stream`, a MakeCudaDeviceStream's; throws for any other stream.
cublasHandle_t CublasHandleOf(cudaStream_t stream);
/// The cuDNN handle bound to `stream`, likewise.
cudnnHandle_t CudnnHandleOf(cudaStream_t stream);

}  // namespace weir::internal
