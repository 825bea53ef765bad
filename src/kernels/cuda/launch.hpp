#pragma once
// The generic CUDA launchers that several ops' kernels share: copies, casts and broadcasts of bytes,
// the binary maps and the relu of the fused matmul and conv2d epilogues, zeroing, the train
// step's increment and learning rate, and the report ring of DeviceReports. Plain C++ with no CUDA
// type, so that the kernels written as .cpp files (compiled by the host compiler into libweir_cuda)
// call them without CUDA headers. `stream` is the cudaStream_t of the kernel's device stream
// (DeviceStream::NativeHandle()). Each call queues its work on the stream and returns; a failed launch
// or library call throws std::runtime_error naming it.
//
// An op's own device code lives in its kernel's .cu file (kernels/cuda/<op>.cu: the __global__
// functions, the kernel class and its registration, launched with LaunchOver of grid.cuh); no op
// adds to this list.
#include <cstddef>
#include <cstdint>

#include "kernels/functors/binary.hpp"
#include "kernels/functors/learning_rate.hpp"
#include "kernels/functors/pieces.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal::cuda {

/// Where a kernel reports what it found wrong in a Run's data (kernels/cuda/cuda_kernel.hpp's
/// DeviceReports, in mapped host memory): a ring of `size` slots, the Run's slot chosen on the device
/// by `counter`, which AdvanceReports increments after each Run. The slot is picked on the device,
/// not passed in, so that a Run captured into a CUDA graph reports into the right slot at every replay.
struct ReportRing {
  std::int64_t* slots = nullptr;
  std::uint64_t* counter = nullptr;
  std::uint64_t size = 1;
};
/// Moves `reports` on to the next Run's slot (after the Run's kernel, on the same stream).
void AdvanceReports(void* stream, const ReportRing& reports);

/// Copies `bytes` device to device, or host to device, on the stream.
void CopyOnDevice(void* stream, void* dst, const void* src, std::size_t bytes);
void CopyFromHost(void* stream, void* dst, const void* host, std::size_t bytes);
/// Copies `bytes` between any two memories a CUDA device can address (its own, another device's,
/// pinned host memory), on the stream.
void CopyBetweenMemories(void* stream, void* dst, const void* src, std::size_t bytes);
/// `height` rows of `width` bytes, `src_pitch` apart in src and `dst_pitch` apart in dst (cudaMemcpy2DAsync).
void CopyRows(void* stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
              std::size_t height);
/// out[i] = the sum (or mean) of pieces[0..count)[i], added in piece order (kernels/functors/pieces.hpp,
/// the CPU's shared-memory reduction): several GPUs' pieces of one collective, copied onto the
/// stream's device. count in [1, kMaxReducedPieces]; `out` may be one of the pieces. T: float, double,
/// int32_t, int64_t.
template <typename T>
void ReducePieces(void* stream, const T* const* pieces, int count, bool mean, T* out, std::int64_t elements);
/// ++*value on the device (the train step).
void Increment(void* stream, std::int64_t* value);
/// out[i] = x[the plan's a-offset of i] (PlanBroadcast, PlanGather); T: uint8_t, uint16_t, uint32_t, uint64_t
/// (the bytes of 1-, 2-, 4- and 8-byte dtypes).
template <typename T> void BroadcastCopy(void* stream, const BroadcastPlan& plan, const T* x, T* out, std::int64_t count);

/// *lr = the schedule's learning rate at *train_step (kernels/functors/learning_rate.hpp); `view`'s
/// arrays in device memory.
void LearningRate(void* stream, const ScheduleView& view, const std::int64_t* train_step, float* lr);

/// y = max(x, 0) (kernels/functors/activation.hpp): the fused matmul and conv2d epilogues' relu; float, double.
template <typename T> void Relu(void* stream, const T* x, T* y, std::int64_t count);

enum class Binary : std::uint8_t { kAdd, kSub, kMul, kDiv, kMod, kPow, kMaximum, kMinimum };
/// out = a (kind) b with broadcasting along `plan` (kernels/functors/binary.hpp; rank 0 or a plan of
/// count elements); T: float, double, int32_t, int64_t (integers: not kDiv, kMod), float16 and bfloat16
/// (kAdd only).
template <typename T>
void BroadcastBinary(void* stream, Binary kind, const BroadcastPlan& plan, const T* a, const T* b, T* out,
                     std::int64_t count);

/// Zeroes `bytes` of device memory on the stream.
void Zero(void* stream, void* memory, std::size_t bytes);

}  // namespace weir::internal::cuda
