#pragma once
// What every CUDA kernel's host side needs: the cudaStream_t of the device stream it was made for.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/cuda_runtime.hpp"
#include "common/device_stream.hpp"
#include "kernels/cuda/launch.hpp"
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

/// An input that an in-place writer (an optimizer update: the variable and its slots) writes: the plan
/// gives the writer the register, after every other reader.
template <typename T> T* MutableOf(const ConstTensorView& view) { return const_cast<T*>(view.As<T>()); }

/// The broadcast plan of a binary op's inputs 0 and 1 into its output 0 (kernels/functors/binary.hpp):
/// rank 0 when both operands have the output's layout. Throws naming the op when the walk has too
/// many axes.
inline BroadcastPlan BinaryPlanOf(const KernelSetup& setup) {
  const Shape& a = setup.inputs[0].shape;
  const Shape& b = setup.inputs[1].shape;
  const Shape& out = setup.outputs[0].shape;
  BroadcastPlan plan;
  if (a == out && b == out) return plan;
  if (!PlanBroadcast(a.Dims(), b.Dims(), out.Dims(), plan)) {
    throw std::invalid_argument(fmt::format("[{}] '{}': {} and {} broadcast over more than {} axes that do not merge",
                                            setup.op_type, setup.op_name, a, b, BroadcastPlan::kMaxRank));
  }
  return plan;
}

/// Device scratch memory a kernel allocates once (with the kernel) and frees with it.
class DeviceScratch {
 public:
  DeviceScratch(int device, std::size_t bytes) : device_(device), memory_(CudaAllocate(device, bytes)) {}
  ~DeviceScratch() { CudaFree(device_, memory_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  template <typename T> T* As(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<std::byte*>(memory_) + byte_offset);
  }

 private:
  int device_;
  void* memory_;
};

/// What a CUDA kernel's device code found wrong in a Run's data (a label out of range), which it
/// cannot throw: one 64-bit report per Run in mapped host memory, in a ring of more slots than Runs
/// can be in flight. The device code reports through CheckIndex (kernels/cuda/grid.cuh) into its Run's
/// slot, which a count of Runs on the device picks (so a Run replayed from a CUDA graph picks the right
/// one); the host reads the slots in AfterCompletion, in Run order (the Run's event has completed, so
/// the device's write is visible), and resets them.
class DeviceReports {
 public:
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  static constexpr int kSlots = 64;

  /// An index out of range: where (the lowest position that had one) and which (its low 32 bits).
  struct BadIndex {
    std::int64_t position;
    std::int32_t index;
  };

  // Mapped memory: the slots, then the device's count of Runs (zero-filled by the allocation).
  DeviceReports() : memory_(CudaAllocateMapped((kSlots + 1) * sizeof(std::int64_t))) {
    for (int i = 0; i < kSlots; ++i) Host()[i] = kNone;
  }
  ~DeviceReports() { CudaFreeMapped(memory_.host); }
  DeviceReports(const DeviceReports&) = delete;
  DeviceReports& operator=(const DeviceReports&) = delete;

  /// What a Run's kernel reports into; AdvanceAfterRun moves it to the next Run's slot.
  cuda::ReportRing Ring() const {
    auto* slots = static_cast<std::int64_t*>(memory_.device);
    return {slots, reinterpret_cast<std::uint64_t*>(slots + kSlots), kSlots};
  }
  /// After each Run's kernels, on its stream.
  void AdvanceAfterRun(void* stream) const { cuda::AdvanceReports(stream, Ring()); }
  /// The oldest unread Run's report (once per completed Run, in Run order), if it found a bad index.
  std::optional<BadIndex> TakeCompleted() {
    volatile std::int64_t* slot = Host() + completed_++ % kSlots;
    const std::int64_t key = *slot;
    *slot = kNone;
    if (key == kNone) return std::nullopt;
    return BadIndex{key >> 32, static_cast<std::int32_t>(static_cast<std::uint32_t>(key & 0xffffffff))};
  }

 private:
  volatile std::int64_t* Host() { return static_cast<volatile std::int64_t*>(memory_.host); }

  MappedHostMemory memory_;
  std::uint64_t completed_ = 0;
};

}  // namespace weir::internal
