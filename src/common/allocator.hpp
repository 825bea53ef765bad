#pragma once
// Device memory allocation behind Tensor and the runtime's register arenas.
#include <cstddef>
#include <memory>

#include "weir/tensor.hpp"

namespace weir::internal {

/// Alignment of every CPU allocation: a cache line, and enough for AVX-512 loads.
inline constexpr std::size_t kCpuAlignment = 64;

/// Allocates `bytes` zero-filled bytes on `device`. Throws std::runtime_error when the device
/// cannot be used (a CUDA device in a build or on a machine without CUDA).
std::shared_ptr<std::byte[]> Allocate(Device device, std::size_t bytes);
/// Allocates `bytes` host bytes left as they are, for a caller that writes every one of them at once
/// (a call's results: zero-filling first would pass over them twice). Buffers of 1 MiB or more are
/// recycled: when the last owner drops one it is kept (up to 256 MiB in all) for the next request of
/// its size, because a fresh large allocation is fresh pages from the kernel, and on a VM their page
/// faults cost more than the copy into them (a 19 MB result: 66 ms of faults against 5 ms of copying).
std::shared_ptr<std::byte[]> AllocateUninitialized(std::size_t bytes);

/// Allocates `bytes` zero-filled bytes of page-locked host memory, which CUDA devices copy from and
/// into asynchronously. Throws std::runtime_error in a build without CUDA.
std::shared_ptr<std::byte[]> AllocatePinned(std::size_t bytes);

/// Copies between any two devices; both ranges must hold `bytes` bytes.
void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);

}  // namespace weir::internal
