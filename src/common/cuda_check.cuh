#pragma once
// One checking macro for every CUDA runtime, cuBLAS, cuDNN and NCCL call: a failure becomes a
// std::runtime_error naming the call, the file and line, and the library's own message.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace weir::internal {

inline const char* CudaErrorString(cudaError_t status) { return cudaGetErrorString(status); }
inline const char* CudaErrorString(cublasStatus_t status) { return cublasGetStatusString(status); }
inline const char* CudaErrorString(cudnnStatus_t status) { return cudnnGetErrorString(status); }
inline const char* CudaErrorString(ncclResult_t status) { return ncclGetErrorString(status); }
inline bool CudaOk(cudaError_t status) { return status == cudaSuccess; }
inline bool CudaOk(cublasStatus_t status) { return status == CUBLAS_STATUS_SUCCESS; }
inline bool CudaOk(cudnnStatus_t status) { return status == CUDNN_STATUS_SUCCESS; }
inline bool CudaOk(ncclResult_t status) { return status == ncclSuccess; }

}  // namespace weir::internal

#define WEIR_CUDA_CHECK(call)                                                                         \
  do {                                                                                                \
    const auto weir_status_ = (call);                                                                 \
    if (!::weir::internal::CudaOk(weir_status_)) {                                                    \
      throw std::runtime_error(std::string("[cuda] ") + #call + " failed at " + __FILE__ + ":" +       \
                               std::to_string(__LINE__) + ": " +                                      \
                               ::weir::internal::CudaErrorString(weir_status_));                      \
    }                                                                                                 \
  } while (false)
