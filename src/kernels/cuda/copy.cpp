// identity, reshape, parallel_cast, sync_dynamic_resize, device_copy, constant, increment and
// learning_rate on CUDA: copies, the train step's increment and its learning rate on the device stream
// (kernels/cuda/copy.cu).
#include <cstdint>
#include <vector>

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

// identity, reshape, parallel_cast (a layout hint) and sync_dynamic_resize (rows cut as the value
// leaves the job): the input's bytes unchanged. device_copy (the planner's copy between memories,
// graph/planner/device_copies.hpp): the same, from or to pinned host memory or another device, on its
// device's host-to-device or device-to-host stream.
template <bool kBetweenMemories> class ByteCopyCuda final : public Kernel {
 public:
  explicit ByteCopyCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), bytes_(setup.inputs[0].NumBytes()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (kBetweenMemories) cuda::CopyBetweenMemories(stream_, outputs[0].data, inputs[0].data, bytes_);
    else cuda::CopyOnDevice(stream_, outputs[0].data, inputs[0].data, bytes_);
  }

 private:
  void* stream_;
  std::size_t bytes_;
};

// A constant, uploaded once with the kernel and copied on the device into the output slot at each
// Run: no host state, so a CUDA graph replays it (a copy from pageable host memory cannot be
// captured; on the CPU a slot keeps its constant across calls instead, but a copy of a few bytes on
// the stream costs less than remembering which slots were filled).
class ConstantCuda final : public Kernel {
 public:
  explicit ConstantCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), bytes_(setup.Get<Tensor>().NumBytes()), value_(setup.device.index, bytes_) {
    if (bytes_ > 0) CudaCopy(value_.As<void>(), true, setup.Get<Tensor>().RawData(), false, bytes_);
  }
  void Run(std::span<const ConstTensorView>, std::span<const TensorView> outputs) override {
    cuda::CopyOnDevice(stream_, outputs[0].data, value_.As<void>(), bytes_);
  }

 private:
  void* stream_;
  std::size_t bytes_;
  DeviceScratch value_;
};

class IncrementCuda final : public Kernel {
 public:
  explicit IncrementCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    cuda::Increment(stream_, const_cast<std::int64_t*>(inputs[0].As<std::int64_t>()));
  }

 private:
  void* stream_;
};

// The schedule's arrays are copied to the device once (one allocation, 8-byte elements each); the rate
// is computed there from the step.
class LearningRateCuda final : public Kernel {
 public:
  explicit LearningRateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), schedule_(setup.Get<LearningRateAttrs>().schedule),
        arrays_(setup.device.index, (schedule_.boundaries.size() + schedule_.values.size() + schedule_.scales.size()) * 8) {
    std::size_t offset = 0;
    const std::int64_t* boundaries = Upload(schedule_.boundaries, offset);
    const double* values = Upload(schedule_.values, offset);
    const double* scales = Upload(schedule_.scales, offset);
    view_ = ViewOf(schedule_, boundaries, values, scales);
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LearningRate(stream_, view_, inputs[0].As<std::int64_t>(), outputs[0].As<float>());
  }

 private:
  template <typename T> const T* Upload(const std::vector<T>& host, std::size_t& offset) {
    static_assert(sizeof(T) == 8);
    if (host.empty()) return nullptr;
    T* device = arrays_.As<T>(offset);
    CudaCopy(device, true, host.data(), false, host.size() * sizeof(T));
    offset += host.size() * sizeof(T);
    return device;
  }

  void* stream_;
  LrSchedule schedule_;
  DeviceScratch arrays_;
  ScheduleView view_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"identity", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda<false>>);
    RegisterKernel({"device_copy", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda<true>>);
    RegisterKernel({"reshape", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda<false>>);
    RegisterKernel({"parallel_cast", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda<false>>);
    RegisterKernel({"sync_dynamic_resize", Device::Kind::kCuda, dtype}, &MakeKernel<ByteCopyCuda<false>>);
    RegisterKernel({"constant", Device::Kind::kCuda, dtype}, &MakeKernel<ConstantCuda>);
  }
  RegisterKernel({"increment", Device::Kind::kCuda, DType::kI64}, &MakeKernel<IncrementCuda>);
  RegisterKernel({"learning_rate", Device::Kind::kCuda, DType::kI64}, &MakeKernel<LearningRateCuda>);
}

}  // namespace
}  // namespace weir::internal
