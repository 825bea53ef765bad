#include "common/allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>

#include "common/cuda_runtime.hpp"

namespace weir::internal {

namespace {

// aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
std::size_t Rounded(std::size_t bytes) {
  return bytes == 0 ? kCpuAlignment : (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
}

std::byte* AlignedBytes(std::size_t rounded) {
  void* memory = std::aligned_alloc(kCpuAlignment, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(memory);
}

std::shared_ptr<std::byte[]> AllocateCpu(std::size_t bytes, bool zero) {
  const std::size_t rounded = Rounded(bytes);
  std::byte* memory = AlignedBytes(rounded);
  if (zero) std::memset(memory, 0, rounded);
  return std::shared_ptr<std::byte[]>(memory, [](std::byte* p) { std::free(p); });
}

// Large result buffers whose owners dropped them, by size, for the next call's results.
class RecycledBuffers {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxKeptBytes = std::size_t{256} << 20;

  std::shared_ptr<std::byte[]> Take(std::size_t bytes) {
    std::byte* memory = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        memory = it->second;
        free_.erase(it);
        kept_ -= bytes;
      }
    }
    if (memory == nullptr) memory = AlignedBytes(bytes);
    return std::shared_ptr<std::byte[]>(memory, [this, bytes](std::byte* p) { Give(p, bytes); });
  }

 private:
  void Give(std::byte* memory, std::size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (kept_ + bytes <= kMaxKeptBytes) {
        free_.emplace(bytes, memory);
        kept_ += bytes;
        return;
      }
    }
    std::free(memory);
  }

  std::mutex mutex_;
  std::multimap<std::size_t, std::byte*> free_;
  std::size_t kept_ = 0;
};

}  // namespace

std::shared_ptr<std::byte[]> AllocateUninitialized(std::size_t bytes) {
  if (bytes < RecycledBuffers::kMinBytes) return AllocateCpu(bytes, false);
  // Never destroyed: results may outlive static destruction (a numpy array freed at exit).
  static auto* const recycled = new RecycledBuffers;
  return recycled->Take(Rounded(bytes));
}

std::shared_ptr<std::byte[]> Allocate(Device device, std::size_t bytes) {
  if (device.kind == Device::Kind::kCpu) return AllocateCpu(bytes, true);
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
