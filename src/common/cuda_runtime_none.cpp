// Stand-in for cuda_runtime.cu in builds without CUDA: the same API, reporting that CUDA is absent.
#include <stdexcept>

#include "common/cuda_runtime.hpp"
#include "common/nccl.hpp"

namespace weir::internal {

namespace {
[[noreturn]] void NotBuilt() {
  throw std::runtime_error("[cuda] this build of weir has no CUDA backend (configure with -Dcuda=enabled)");
}
}  // namespace

bool CudaBuilt() { return false; }
int CudaDeviceCount() { return 0; }
std::string CudaDescribe() { return "built without CUDA"; }
void CudaUseDevicesFrom(int) {}
int CudaOrdinal(int device) { return device; }
void CudaSetCurrentDevice(int) { NotBuilt(); }
bool CudaEnablePeerAccess(int, int) { NotBuilt(); }
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

std::string NcclNewUniqueId() { NotBuilt(); }
struct NcclCommunicator::Impl {};
NcclCommunicator::NcclCommunicator(const NcclOptions&) { NotBuilt(); }
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::AllReduce(const void*, void*, std::size_t, NcclType, NcclReduce, void*, const std::string&) {
  NotBuilt();
}
void NcclCommunicator::Broadcast(const void*, void*, std::size_t, NcclType, int, void*, const std::string&) { NotBuilt(); }
void NcclCommunicator::Send(const void*, std::size_t, NcclType, int, void*, const std::string&) { NotBuilt(); }
void NcclCommunicator::Recv(void*, std::size_t, NcclType, int, void*, const std::string&) { NotBuilt(); }
void NcclCommunicator::BroadcastEach(std::span<const Part>, NcclType, void*, const std::string&) { NotBuilt(); }
std::chrono::milliseconds NcclCommunicator::Timeout() const { return {}; }
std::optional<std::string> NcclCommunicator::QueuedLongerThan(std::chrono::milliseconds) { return std::nullopt; }
std::string NcclCommunicator::AsyncError() { return {}; }
void NcclCommunicator::Abort(const std::string&) noexcept {}
std::string NcclCommunicator::Failure() const { return {}; }

}  // namespace weir::internal
