#pragma once
// The library handles of a CUDA device stream (common/cuda_stream.cu makes them with the stream,
// bound to it, and destroys them with it): kernels find them by the stream they launch on.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace weir::internal {

/// The cuBLAS handle bound to `stream`, a MakeCudaDeviceStream's; throws for any other stream.
cublasHandle_t CublasHandleOf(cudaStream_t stream);
/// Whether the f32 GEMMs of `stream`'s cuBLAS handle may round their operands to TF32 on tensor cores
/// (SessionOptions::tensor_float_32). Each f32 product kernel sets it on its stream's handle when it
/// is made: a stream's kernels all come from one plan, so they agree.
void UseTensorFloat32(cudaStream_t stream, bool allowed);
/// The cuDNN handle bound to `stream`, likewise.
cudnnHandle_t CudnnHandleOf(cudaStream_t stream);
/// The cuBLASLt handle of `stream`, and the workspace it may use: cuBLAS's own, which the two share
/// safely because the stream runs their calls one after the other.
struct CublasLtOf {
  explicit CublasLtOf(cudaStream_t stream);
  cublasLtHandle_t handle;
  void* workspace;
  std::size_t workspace_bytes;
};

}  // namespace weir::internal
