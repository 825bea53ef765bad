#include "common/allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "common/cuda_runtime.hpp"

namespace weir::internal {

namespace {

std::shared_ptr<std::byte[]> AllocateCpu(std::size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  const std::size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* memory = std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
  if (memory == nullptr) throw std::bad_alloc();
  std::memset(memory, 0, rounded == 0 ? kCpuAlignment : rounded);
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(memory), [](std::byte* p) { std::free(p); });
}

}  // namespace

std::shared_ptr<std::byte[]> Allocate(Device device, std::size_t bytes) {
  if (device.kind == Device::Kind::kCpu) return AllocateCpu(bytes);
  void* memory = CudaAllocate(device.index, bytes);
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(memory),
                                      [index = device.index](std::byte* p) { CudaFree(index, p); });
}

std::shared_ptr<std::byte[]> AllocatePinned(std::size_t bytes) {
  const MappedHostMemory memory = CudaAllocateMapped(bytes);  // zero-filled
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(memory.host), [](std::byte* p) { CudaFreeMapped(p); });
}

void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.kind == Device::Kind::kCpu && src_device.kind == Device::Kind::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  CudaCopy(dst, dst_device.kind == Device::Kind::kCuda, src, src_device.kind == Device::Kind::kCuda, bytes);
}

}  // namespace weir::internal
