// The core's side of the CUDA backend: cuda_runtime.hpp's and nccl.hpp's functions forward to the
// backend library, which is loaded (dlopen) from beside libweir the first time one of them needs it.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "common/cuda_backend.hpp"

namespace weir::internal {

namespace {

#ifdef WEIR_HAVE_CUDA_BACKEND
constexpr bool kCudaBuilt = true;
#else
constexpr bool kCudaBuilt = false;
#endif

// The backend library's file name; it is installed in the folder of libweir itself.
constexpr const char* kBackendLibrary = "libweir_cuda.so";

std::atomic<const CudaBackend*> registered{nullptr};
std::mutex loading;          // one dlopen at a time
std::string load_failure;    // why the backend did not load (guarded by `loading`); tried once
std::atomic<int> first_device{0};

// Whether an NVIDIA driver is installed: its device nodes (or WSL's GPU node) are there, or its user
// library, libcuda.so.1, loads (a container may show the GPU without the nodes this looks for).
// Without one no GPU can be visible, and loading the CUDA libraries to learn so would cost a CPU
// program ~160 MB. libcuda stays loaded: the backend would load it anyway.
bool NvidiaDriverPresent() {
  for (const char* node : {"/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/dxg"}) {
    if (::access(node, F_OK) == 0) return true;
  }
  static const bool driver_library = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr;
  return driver_library;
}

// libweir_cuda.so in the folder libweir was loaded from (the build folder, the Python package, or
// the install's libdir: they are installed together).
std::string BackendPath() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&RegisterCudaBackend), &info) == 0 || info.dli_fname == nullptr) {
    return kBackendLibrary;  // the loader's search path then
  }
  return (std::filesystem::path(info.dli_fname).parent_path() / kBackendLibrary).string();
}

[[noreturn]] void NotBuilt() {
  throw std::runtime_error("[cuda] this build of weir has no CUDA backend (configure with -Dcuda=enabled)");
}

const CudaBackend& Backend() { return LoadCudaBackend(); }

}  // namespace

void RegisterCudaBackend(const CudaBackend& backend) { registered.store(&backend, std::memory_order_release); }

bool CudaBackendLoaded() { return registered.load(std::memory_order_acquire) != nullptr; }

const CudaBackend& LoadCudaBackend() {
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) return *backend;
  if (!kCudaBuilt) NotBuilt();
  std::lock_guard lock(loading);
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) return *backend;
  if (load_failure.empty()) {
    // Its static initializers register the table and its kernels; the handle stays open for good.
    const std::string path = BackendPath();
    if (::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      const char* why = ::dlerror();
      load_failure = "[cuda] the CUDA backend " + path + " could not be loaded: " + (why ? why : "unknown error");
    } else if (registered.load(std::memory_order_acquire) == nullptr) {
      load_failure = "[cuda] the CUDA backend " + path + " loaded but registered nothing";
    }
  }
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) return *backend;
  throw std::runtime_error(load_failure);
}

bool CudaBuilt() { return kCudaBuilt; }

namespace {

// Loads the backend to answer a question about GPUs where one could be there. Empty when it is
// loaded; otherwise why no GPU is usable, without loading anything where no driver is installed.
std::string LoadForQuery() {
  if (CudaBackendLoaded()) return {};
  if (!kCudaBuilt) return "built without CUDA";
  if (!NvidiaDriverPresent()) return "CUDA built, but this machine has no NVIDIA driver (no /dev/nvidiactl, no libcuda.so.1)";
  try {
    LoadCudaBackend();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return {};
}

}  // namespace

int CudaDeviceCount() { return LoadForQuery().empty() ? Backend().device_count() : 0; }

std::string CudaDescribe() {
  const std::string why = LoadForQuery();
  return why.empty() ? Backend().describe() : why;
}

void CudaUseDevicesFrom(int first) { first_device.store(first); }
int CudaOrdinal(int device) { return first_device.load() + device; }

void CudaSetCurrentDevice(int device) { Backend().set_current_device(device); }
bool CudaEnablePeerAccess(int device, int peer) { return Backend().enable_peer_access(device, peer); }
void* CudaAllocate(int device, std::size_t bytes) { return Backend().allocate(device, bytes); }

void CudaFree(int device, void* memory) noexcept {
  // Only memory the backend allocated comes here, so it is loaded.
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) backend->free(device, memory);
}

void CudaCopy(void* dst, bool dst_on_device, const void* src, bool src_on_device, std::size_t bytes) {
  Backend().copy(dst, dst_on_device, src, src_on_device, bytes);
}

MappedHostMemory CudaAllocateMapped(std::size_t bytes) { return Backend().allocate_mapped(bytes); }

void CudaFreeMapped(void* host) noexcept {
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) backend->free_mapped(host);
}

std::unique_ptr<DeviceStream> MakeCudaDeviceStream(int device, std::string name) {
  return Backend().make_device_stream(device, std::move(name));
}

void* CudaCaptureGraph(void* stream, const std::function<void()>& record) {
  return Backend().capture_graph(stream, record);
}
void CudaLaunchGraph(void* graph, void* stream) { Backend().launch_graph(graph, stream); }

void CudaDestroyGraph(void* graph) noexcept {
  if (const CudaBackend* backend = registered.load(std::memory_order_acquire)) backend->destroy_graph(graph);
}

void CudaFillAsyncForTest(void* stream, float* data, std::size_t count, float value) {
  Backend().fill_async_for_test(stream, data, count, value);
}
void CudaFillForTest(int device, float* data, std::size_t count, float value) {
  Backend().fill_for_test(device, data, count, value);
}

std::string NcclNewUniqueId() { return Backend().nccl_new_unique_id(); }
std::unique_ptr<NcclCommunicator> JoinNccl(const NcclOptions& options) { return Backend().join_nccl(options); }

}  // namespace weir::internal
