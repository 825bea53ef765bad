// argmax, one_hot and the maximum / minimum gradients on CUDA (kernels/cuda/index.cu), with the CPU
// kernels' math; an index out of range fails one_hot's call with the CPU's error (DeviceReports).
#include <cstdint>
#include <memory>

#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index> class ArgMaxCuda final : public Kernel {
 public:
  explicit ArgMaxCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), split_(setup.inputs[0].shape, setup.Get<ArgMaxAttrs>().axis) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::ArgMax<T, Index>(stream_, inputs[0].As<T>(), outputs[0].As<Index>(), split_.outer, split_.n, split_.inner);
  }

 private:
  void* stream_;
  AxisSplit split_;
};

template <typename T> std::unique_ptr<Kernel> MakeArgMax(const KernelSetup& setup) {
  if (setup.Get<ArgMaxAttrs>().output_dtype == DType::kI64) return std::make_unique<ArgMaxCuda<T, std::int64_t>>(setup);
  return std::make_unique<ArgMaxCuda<T, std::int32_t>>(setup);
}

template <typename T> class ExtremumGradCuda final : public Kernel {
 public:
  explicit ExtremumGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), maximum_(setup.op_type == "maximum_grad"), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::ExtremumGrad<T>(stream_, maximum_, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), outputs[0].As<T>(),
                          outputs[1].As<T>(), count_);
  }

 private:
  void* stream_;
  bool maximum_;
  std::int64_t count_;
};

template <typename Index, typename T> class OneHotCuda final : public Kernel {
 public:
  explicit OneHotCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()), depth_(setup.Get<OneHotAttrs>().depth),
        on_(static_cast<T>(setup.Get<OneHotAttrs>().on_value)), off_(static_cast<T>(setup.Get<OneHotAttrs>().off_value)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::OneHot<Index, T>(stream_, inputs[0].As<Index>(), outputs[0].As<T>(), count_, depth_, on_, off_, reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }
  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[one_hot] index {} at position {} is outside [0, {})", bad->index, bad->position, depth_));
    }
  }

 private:
  void* stream_;
  std::int64_t count_;
  std::int64_t depth_;
  T on_;
  T off_;
  DeviceReports reports_;
};

template <typename Index> std::unique_ptr<Kernel> MakeOneHot(const KernelSetup& setup) {
  switch (setup.outputs[0].dtype) {
    case DType::kF64: return std::make_unique<OneHotCuda<Index, double>>(setup);
    case DType::kI32: return std::make_unique<OneHotCuda<Index, std::int32_t>>(setup);
    case DType::kI64: return std::make_unique<OneHotCuda<Index, std::int64_t>>(setup);
    default: return std::make_unique<OneHotCuda<Index, float>>(setup);
  }
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kF32}, &MakeArgMax<float>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kF64}, &MakeArgMax<double>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kI32}, &MakeArgMax<std::int32_t>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kI64}, &MakeArgMax<std::int64_t>);
  RegisterKernel({"maximum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ExtremumGradCuda<float>>);
  RegisterKernel({"maximum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ExtremumGradCuda<double>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ExtremumGradCuda<float>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ExtremumGradCuda<double>>);
  RegisterKernel({"one_hot", Device::Kind::kCuda, DType::kI32}, &MakeOneHot<std::int32_t>);
  RegisterKernel({"one_hot", Device::Kind::kCuda, DType::kI64}, &MakeOneHot<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
