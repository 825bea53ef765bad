// CUDA streams and events behind the DeviceStream interface (common/device_stream.hpp): the
// asynchronous device path that the runtime also runs, and tests, with CPU streams. Compiled by nvcc.
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cuda_check.cuh"
#include "common/cuda_handles.cuh"
#include "common/cuda_runtime.hpp"

namespace weir::internal {

namespace {

// Events are recycled: creating and destroying one per act costs microseconds each (OneFlow v0.3.4
// did; the runtime reference, 7.6).
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool() {
    cudaSetDevice(CudaOrdinal(device_));
    for (cudaEvent_t event : free_) cudaEventDestroy(event);
  }
  cudaEvent_t Get() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        cudaEvent_t event = free_.back();
        free_.pop_back();
        return event;
      }
    }
    cudaEvent_t event = nullptr;
    // Blocking sync: a thread that synchronizes on it sleeps until the GPU signals (CudaStreamEvent).
    WEIR_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync));
    return event;
  }
  void Put(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(event);
  }
  int Device() const { return device_; }

 private:
  int device_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

class CudaStreamEvent final : public StreamEvent {
 public:
  CudaStreamEvent(std::shared_ptr<EventPool> pool, cudaEvent_t event) : pool_(std::move(pool)), event_(event) {}
  ~CudaStreamEvent() override { pool_->Put(event_); }

  bool WaitFor(std::chrono::milliseconds) override {
    // Query for a short while (the work behind a small act completes within microseconds), then sleep
    // until the GPU signals: waiting for a long step then costs no core. No timeout once asleep: work
    // already queued on a stream completes (a collective stuck on a lost peer is aborted by its group's
    // watchdog, which releases the stream).
    const auto spin_until = std::chrono::steady_clock::now() + SpinBudget();
    cudaError_t status = cudaEventQuery(event_);
    while (status == cudaErrorNotReady && std::chrono::steady_clock::now() < spin_until) status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) status = cudaEventSynchronize(event_);
    if (status != cudaSuccess) {
      throw std::runtime_error("[cuda] device " + std::to_string(pool_->Device()) +
                               ": the work before an event failed: " + cudaGetErrorString(status));
    }
    return true;
  }

 private:
  // How long a poller queries before it sleeps: WEIR_CUDA_SPIN_US, else 20 µs. Spinning holds a core
  // for as long; sleeping adds the wake-up (an interrupt, then the thread scheduled) to the hand-off.
  static std::chrono::microseconds SpinBudget() {
    static const std::chrono::microseconds budget = [] {
      const char* text = std::getenv("WEIR_CUDA_SPIN_US");
      return std::chrono::microseconds(text != nullptr && *text != '\0' ? std::strtol(text, nullptr, 10) : 20);
    }();
    return budget;
  }

  std::shared_ptr<EventPool> pool_;
  cudaEvent_t event_;
};

// Each live stream's library handles.
struct LibraryHandles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void* blas_workspace = nullptr;
};
// cuBLAS's workspace, given to it up front: a cuBLAS call captured into a CUDA graph must not allocate
// (NVIDIA's guidance for Hopper: 32 MiB; less suffices for older GPUs).
constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;
std::mutex& HandlesMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<cudaStream_t, LibraryHandles>& Handles() {
  static std::map<cudaStream_t, LibraryHandles> handles;
  return handles;
}
void Destroy(const LibraryHandles& handles) {
  if (handles.blas != nullptr) cublasDestroy(handles.blas);
  if (handles.lt != nullptr) cublasLtDestroy(handles.lt);
  if (handles.dnn != nullptr) cudnnDestroy(handles.dnn);
  if (handles.blas_workspace != nullptr) cudaFree(handles.blas_workspace);
}

class CudaDeviceStream final : public DeviceStream {
 public:
  CudaDeviceStream(int device, std::string name)
      : device_(device), name_(std::move(name)), pool_(std::make_shared<EventPool>(device)) {
    const int visible = CudaDeviceCount();
    if (device < 0 || CudaOrdinal(device) >= visible) {
      throw std::runtime_error("[cuda] device " + std::to_string(device) + " is not available (" +
                               std::to_string(visible) + " visible)");
    }
    WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device_)));
    WEIR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LibraryHandles handles;
    try {
      WEIR_CUDA_CHECK(cublasCreate(&handles.blas));
      WEIR_CUDA_CHECK(cublasSetStream(handles.blas, stream_));
      WEIR_CUDA_CHECK(cudaMalloc(&handles.blas_workspace, kCublasWorkspaceBytes));
      WEIR_CUDA_CHECK(cublasSetWorkspace(handles.blas, handles.blas_workspace, kCublasWorkspaceBytes));
      WEIR_CUDA_CHECK(cublasLtCreate(&handles.lt));
      WEIR_CUDA_CHECK(cudnnCreate(&handles.dnn));
      WEIR_CUDA_CHECK(cudnnSetStream(handles.dnn, stream_));
    } catch (...) {
      Destroy(handles);
      cudaStreamDestroy(stream_);
      throw;
    }
    std::lock_guard<std::mutex> lock(HandlesMutex());
    Handles()[stream_] = handles;
  }
  ~CudaDeviceStream() override {
    cudaSetDevice(CudaOrdinal(device_));
    cudaStreamSynchronize(stream_);  // what was queued runs before the memory it uses goes
    {
      std::lock_guard<std::mutex> lock(HandlesMutex());
      Destroy(Handles().at(stream_));
      Handles().erase(stream_);
    }
    cudaStreamDestroy(stream_);
  }

  const std::string& Name() const override { return name_; }

  void Submit(std::function<void()> work) override {
    // Launches from this thread go to this stream's device (cheap when it already is current).
    WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(device_)));
    work();
  }

  std::unique_ptr<StreamEvent> Record() override {
    cudaEvent_t event = pool_->Get();
    const cudaError_t status = cudaEventRecord(event, stream_);
    if (status != cudaSuccess) {
      pool_->Put(event);
      WEIR_CUDA_CHECK(status);
    }
    return std::make_unique<CudaStreamEvent>(pool_, event);
  }

  void* NativeHandle() const override { return stream_; }

 private:
  int device_;
  std::string name_;
  std::shared_ptr<EventPool> pool_;
  cudaStream_t stream_ = nullptr;
};

__global__ void FillAsyncKernel(float* data, std::size_t count, float value) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) data[i] = value;
}

}  // namespace

namespace {
LibraryHandles HandlesOf(cudaStream_t stream, const char* library) {
  std::lock_guard<std::mutex> lock(HandlesMutex());
  const auto it = Handles().find(stream);
  if (it == Handles().end()) {
    throw std::invalid_argument(std::string("[cuda] ") + library + " on a stream that no Weir device stream owns");
  }
  return it->second;
}
}  // namespace

cublasHandle_t CublasHandleOf(cudaStream_t stream) { return HandlesOf(stream, "cuBLAS").blas; }
void UseTensorFloat32(cudaStream_t stream, bool allowed) {
  WEIR_CUDA_CHECK(cublasSetMathMode(CublasHandleOf(stream), allowed ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}
cudnnHandle_t CudnnHandleOf(cudaStream_t stream) { return HandlesOf(stream, "cuDNN").dnn; }
CublasLtOf::CublasLtOf(cudaStream_t stream) {
  const LibraryHandles handles = HandlesOf(stream, "cuBLASLt");
  handle = handles.lt;
  workspace = handles.blas_workspace;
  workspace_bytes = kCublasWorkspaceBytes;
}

namespace cuda {

std::unique_ptr<DeviceStream> MakeDeviceStream(int device, std::string name) {
  return std::make_unique<CudaDeviceStream>(device, std::move(name));
}

void FillAsyncForTest(void* stream, float* data, std::size_t count, float value) {
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  FillAsyncKernel<<<blocks == 0 ? 1 : blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(data, count, value);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda

}  // namespace weir::internal
