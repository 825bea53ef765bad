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

/// Allocates `bytes` zero-filled bytes of page-locked host memory, which CUDA devices copy from and
/// into asynchronously. Throws std::runtime_error in a build without CUDA.
std::shared_ptr<std::byte[]> AllocatePinned(std::size_t bytes);

/// Copies between any two devices; both ranges must hold `bytes` bytes.
void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);

}  // namespace weir::internal
