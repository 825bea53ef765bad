// The CUDA backend's runtime layer, compiled by nvcc into libweir_cuda when -Dcuda is enabled. It
// stays free of fmt and CAF (nvcc chokes on fmt's consteval strings in C++20). It implements
// cuda_runtime.hpp's functions, which the core forwards here, and hands the core their table as the
// library loads (common/cuda_backend.hpp).
#include <cstring>

#include "common/cuda_backend.hpp"
#include "common/cuda_check.cuh"

namespace weir::internal::cuda {

namespace {

__global__ void FillKernel(float* data, std::size_t count, float value) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) data[i] = value;
}

}  // namespace

int DeviceCount() {
  int count = 0;
  // No driver or no GPU is a normal situation on CPU machines, not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string Describe() {
  if (DeviceCount() == 0) return "CUDA built, but no usable device";
  cudaDeviceProp prop{};
  WEIR_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major * 10 + prop.minor) + ", " +
         std::to_string(prop.totalGlobalMem >> 30) + " GiB), cuBLAS " + std::to_string(CUBLAS_VERSION) +
         ", cuDNN " + std::to_string(cudnnGetVersion()) + ", NCCL " + std::to_string(NCCL_VERSION_CODE);
}

void SetCurrentDevice(int device) { WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device))); }

bool EnablePeerAccess(int device, int peer) {
  int can = 0;
  WEIR_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, CudaOrdinal(device), CudaOrdinal(peer)));
  if (can == 0) return false;
  WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device)));
  const cudaError_t status = cudaDeviceEnablePeerAccess(CudaOrdinal(peer), 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the sticky-free error the second job of a session meets
    return true;
  }
  WEIR_CUDA_CHECK(status);
  return true;
}

void* Allocate(int device, std::size_t bytes) {
  if (device < 0 || CudaOrdinal(device) >= DeviceCount()) {
    throw std::runtime_error("[cuda] device " + std::to_string(device) + " (CUDA ordinal " +
                             std::to_string(CudaOrdinal(device)) + ") is not available (" +
                             std::to_string(DeviceCount()) + " visible)");
  }
  WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device)));
  void* memory = nullptr;
  WEIR_CUDA_CHECK(cudaMalloc(&memory, bytes == 0 ? 1 : bytes));
  WEIR_CUDA_CHECK(cudaMemset(memory, 0, bytes == 0 ? 1 : bytes));
  return memory;
}

void Free(int device, void* memory) noexcept {
  cudaSetDevice(CudaOrdinal(device));
  cudaFree(memory);
}

void Copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, std::size_t bytes) {
  // Between two GPUs' memories (a variable moving to another GPU) unified addressing finds the devices.
  const cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDefault : cudaMemcpyHostToDevice)
                                            : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  WEIR_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

MappedHostMemory AllocateMapped(std::size_t bytes) {
  MappedHostMemory memory;
  WEIR_CUDA_CHECK(cudaHostAlloc(&memory.host, bytes == 0 ? 1 : bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(memory.host, 0, bytes);
  const cudaError_t status = cudaHostGetDevicePointer(&memory.device, memory.host, 0);
  if (status != cudaSuccess) {
    cudaFreeHost(memory.host);
    WEIR_CUDA_CHECK(status);
  }
  return memory;
}

void FreeMapped(void* host) noexcept { cudaFreeHost(host); }

void* CaptureGraph(void* stream, const std::function<void()>& record) {
  cudaStream_t native = static_cast<cudaStream_t>(stream);
  // Thread-local mode: only this thread's calls are checked against the capture (other streams'
  // executors keep launching on their own streams meanwhile).
  WEIR_CUDA_CHECK(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    record();
  } catch (...) {
    cudaStreamEndCapture(native, &graph);  // ends the capture whatever happened, so the stream works again
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  WEIR_CUDA_CHECK(cudaStreamEndCapture(native, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  WEIR_CUDA_CHECK(status);
  return exec;
}

void LaunchGraph(void* graph, void* stream) {
  WEIR_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)));
}

void DestroyGraph(void* graph) noexcept { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)); }

void FillForTest(int device, float* data, std::size_t count, float value) {
  WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device)));
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  FillKernel<<<blocks == 0 ? 1 : blocks, kThreads>>>(data, count, value);
  WEIR_CUDA_CHECK(cudaGetLastError());
  WEIR_CUDA_CHECK(cudaDeviceSynchronize());
}

// Defined in cuda_stream.cu and nccl.cu.
std::unique_ptr<DeviceStream> MakeDeviceStream(int device, std::string name);
void FillAsyncForTest(void* stream, float* data, std::size_t count, float value);
std::string NcclNewUniqueId();
std::unique_ptr<NcclCommunicator> JoinNccl(const NcclOptions& options);

namespace {

const CudaBackend kBackend{
    .device_count = &DeviceCount,
    .describe = &Describe,
    .set_current_device = &SetCurrentDevice,
    .enable_peer_access = &EnablePeerAccess,
    .allocate = &Allocate,
    .free = &Free,
    .copy = &Copy,
    .allocate_mapped = &AllocateMapped,
    .free_mapped = &FreeMapped,
    .make_device_stream = &MakeDeviceStream,
    .capture_graph = &CaptureGraph,
    .launch_graph = &LaunchGraph,
    .destroy_graph = &DestroyGraph,
    .fill_async_for_test = &FillAsyncForTest,
    .fill_for_test = &FillForTest,
    .nccl_new_unique_id = &NcclNewUniqueId,
    .join_nccl = &JoinNccl,
};

// Runs as the library loads (dlopen by the core, or a program that links it).
[[maybe_unused]] const bool registered = (RegisterCudaBackend(kBackend), true);

}  // namespace

}  // namespace weir::internal::cuda
