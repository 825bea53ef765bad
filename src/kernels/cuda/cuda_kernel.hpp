#pragma once
// What every CUDA kernel's host side needs: the cudaStream_t of the device stream it was made for.
#include <stdexcept>

#include <fmt/format.h>

#include "common/device_stream.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// The stream a CUDA kernel launches on; throws naming the op when the kernel was made without one
/// (a CUDA kernel runs only on the asynchronous device path).
inline void* CudaStreamOf(const KernelSetup& setup) {
  void* stream = setup.stream != nullptr ? setup.stream->NativeHandle() : nullptr;
  if (stream == nullptr) {
    throw std::invalid_argument(fmt::format("[{}] '{}': a CUDA kernel needs its device's CUDA stream", setup.op_type,
                                            setup.op_name));
  }
  return stream;
}

}  // namespace weir::internal
