#pragma once
// The CUDA runtime as plain C++: no CUDA header leaks out of here. The functions forward to the CUDA
// backend library, loaded on first use (common/cuda_backend.hpp). In a build without CUDA, or where
// the backend cannot be loaded, every function reports "not available" (count 0, throwing
// allocators), so callers need no #ifdefs.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/device_stream.hpp"

namespace weir::internal {

/// True when this build compiled the CUDA backend (loads nothing).
bool CudaBuilt();
/// Visible CUDA devices; 0 without a driver, a GPU, a CUDA build or a loadable backend. Loads the
/// backend where an NVIDIA driver is installed; elsewhere it is 0 without loading anything.
int CudaDeviceCount();
/// "H100 (sm_90, 80 GiB)" etc., or why no device is usable.
std::string CudaDescribe();

/// Which GPUs a plan's devices are: device index d is CUDA ordinal `first + d`. Each process of a
/// session with one GPU per process uses the GPU of its local rank this way; 0 otherwise. Set before
/// the process first uses a GPU.
void CudaUseDevicesFrom(int first);
/// The CUDA ordinal of a plan's device index.
int CudaOrdinal(int device);

/// Makes `device` (a plan's device index) the calling thread's current GPU.
void CudaSetCurrentDevice(int device);

/// Lets kernels and copies on `device` reach `peer`'s memory directly (cudaDeviceEnablePeerAccess),
/// where the GPUs can; true if they can (it stays on for the process). Copies between GPUs that
/// cannot are still right: CUDA stages them through the host.
bool CudaEnablePeerAccess(int device, int peer);

void* CudaAllocate(int device, std::size_t bytes);
void CudaFree(int device, void* memory) noexcept;
void CudaCopy(void* dst, bool dst_on_device, const void* src, bool src_on_device, std::size_t bytes);

/// Pinned host memory the device writes to directly (cudaHostAllocMapped): a kernel reports to the host
/// through it without a copy; the host reads it once the work's event has completed. `device` is the
/// address kernels write to.
struct MappedHostMemory {
  void* host = nullptr;
  void* device = nullptr;
};
MappedHostMemory CudaAllocateMapped(std::size_t bytes);
void CudaFreeMapped(void* host) noexcept;

/// A stream of CUDA device `device` (non-blocking, with a pool of timing-free events): work submitted
/// runs at once on the caller's thread and queues device work on NativeHandle(); an event is a CUDA
/// event recorded on the stream, waited for by polling cudaEventQuery (a device error there names the
/// device). Compiled here, not yet run on a GPU.
std::unique_ptr<DeviceStream> MakeCudaDeviceStream(int device, std::string name);

/// Captures the work `record` queues on `stream` (a MakeCudaDeviceStream's NativeHandle()) into an
/// executable CUDA graph, without running it, and returns the graph. Throws if the capture fails (work
/// that cannot be captured); the stream is usable again then.
void* CudaCaptureGraph(void* stream, const std::function<void()>& record);
/// Queues one run of a captured graph on `stream`.
void CudaLaunchGraph(void* graph, void* stream);
void CudaDestroyGraph(void* graph) noexcept;

/// Queues a kernel filling `count` floats at device memory `data` with `value` on `stream` (a
/// MakeCudaDeviceStream's NativeHandle()); the stream's event tells when it is done.
void CudaFillAsyncForTest(void* stream, float* data, std::size_t count, float value);

/// Fills `count` floats at device memory `data` with `value` using a kernel on `device`, then
/// waits for it: proves kernels compile, link and launch.
void CudaFillForTest(int device, float* data, std::size_t count, float value);

}  // namespace weir::internal
