#pragma once
// The CUDA backend as a library loaded on demand. Weir's core (libweir) links no CUDA library: the
// backend (libweir_cuda: the CUDA runtime wrapper, NCCL, the CUDA kernels and their launchers) sits
// beside it and is loaded the first time a program asks for a GPU (a session with GPU devices,
// weir.visible_gpus() on a machine with an NVIDIA driver, the list of GPU kernels), so that a CPU
// program maps none of cudart, cuBLAS, cuDNN or NCCL. When it loads, it hands the core this table
// (RegisterCudaBackend) and registers its kernels. A program that links libweir_cuda itself (the CUDA
// test suite) has it registered before main.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/cuda_runtime.hpp"
#include "common/nccl.hpp"

namespace weir::internal {

/// What the core calls in the backend: the functions of cuda_runtime.hpp and nccl.hpp, which forward
/// here (see them for what each does).
struct CudaBackend {
  int (*device_count)();
  std::string (*describe)();
  void (*set_current_device)(int device);
  bool (*enable_peer_access)(int device, int peer);
  void* (*allocate)(int device, std::size_t bytes);
  void (*free)(int device, void* memory) noexcept;
  void (*copy)(void* dst, bool dst_on_device, const void* src, bool src_on_device, std::size_t bytes);
  MappedHostMemory (*allocate_mapped)(std::size_t bytes);
  void (*free_mapped)(void* host) noexcept;
  std::unique_ptr<DeviceStream> (*make_device_stream)(int device, std::string name);
  void* (*capture_graph)(void* stream, const std::function<void()>& record);
  void (*launch_graph)(void* graph, void* stream);
  void (*destroy_graph)(void* graph) noexcept;
  void (*fill_async_for_test)(void* stream, float* data, std::size_t count, float value);
  void (*fill_for_test)(int device, float* data, std::size_t count, float value);
  std::string (*nccl_new_unique_id)();
  std::unique_ptr<NcclCommunicator> (*join_nccl)(const NcclOptions& options);
};

/// Called once by the backend library as it loads; `backend` lives as long as the process.
void RegisterCudaBackend(const CudaBackend& backend);

/// The backend, loaded now if it is not yet. Throws std::runtime_error saying why when this build has
/// none or it cannot be loaded (the loader's message: a missing CUDA library, say).
const CudaBackend& LoadCudaBackend();

/// Whether the backend is loaded (loads nothing).
bool CudaBackendLoaded();

}  // namespace weir::internal
