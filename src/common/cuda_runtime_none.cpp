// Stand-in for cuda_runtime.cu in builds without CUDA: the same API, reporting that CUDA is absent.
#include <stdexcept>

#include "common/cuda_runtime.hpp"

namespace weir::internal {

namespace {
[[noreturn]] void NotBuilt() {
  throw std::runtime_error("[cuda] this build of weir has no CUDA backend (configure with -Dcuda=enabled)");
}
}  // namespace

bool CudaBuilt() { return false; }
int CudaDeviceCount() { return 0; }
std::string CudaDescribe() { return "built without CUDA"; }
void* CudaAllocate(int, std::size_t) { NotBuilt(); }
void CudaFree(int, void*) noexcept {}
void CudaCopy(void*, bool, const void*, bool, std::size_t) { NotBuilt(); }
void CudaFillForTest(int, float*, std::size_t, float) { NotBuilt(); }
std::unique_ptr<DeviceStream> MakeCudaDeviceStream(int, std::string) { NotBuilt(); }
void CudaFillAsyncForTest(void*, float*, std::size_t, float) { NotBuilt(); }
MappedHostMemory CudaAllocateMapped(std::size_t) { NotBuilt(); }
void* CudaCaptureGraph(void*, const std::function<void()>&) { NotBuilt(); }
void CudaLaunchGraph(void*, void*) { NotBuilt(); }
void CudaDestroyGraph(void*) noexcept {}
void CudaFreeMapped(void*) noexcept {}

}  // namespace weir::internal
