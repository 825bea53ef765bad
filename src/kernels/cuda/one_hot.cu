// one_hot on CUDA: a thread per index writes its row and checks the index (CheckIndex reports a bad
// one into the Run's slot); an index out of range fails the call with the CPU kernel's error
// (DeviceReports).
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename Index, typename T>
__global__ void OneHotKernel(const Index* indices, T* out, std::int64_t count, std::int64_t depth, T on, T off,
                             cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const std::int64_t index = indices[i];
    T* row = out + i * depth;
    for (std::int64_t c = 0; c < depth; ++c) row[c] = c == index ? on : off;
    cuda::CheckIndex(i, index, depth, reports);
  }
}

template <typename Index, typename T> class OneHotCuda final : public Kernel {
 public:
  explicit OneHotCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()), depth_(setup.Get<OneHotAttrs>().depth),
        on_(static_cast<T>(setup.Get<OneHotAttrs>().on_value)), off_(static_cast<T>(setup.Get<OneHotAttrs>().off_value)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &OneHotKernel<Index, T>, inputs[0].As<Index>(), outputs[0].As<T>(), count_, depth_,
                     on_, off_, reports_.Ring());
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
  RegisterKernel({"one_hot", Device::Kind::kCuda, DType::kI32}, &MakeOneHot<std::int32_t>);
  RegisterKernel({"one_hot", Device::Kind::kCuda, DType::kI64}, &MakeOneHot<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
