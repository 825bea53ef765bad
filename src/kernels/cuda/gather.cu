// gather on CUDA: a thread per output element (the index arithmetic in kernels/functors/gather.hpp)
// checks its index (CheckIndex reports a bad one into the Run's slot) and copies one word; an index
// out of range fails the call with the CPU kernel's error (DeviceReports). Elements are moved as words
// of their size, so one kernel serves every dtype.
#include <cstdint>
#include <memory>

#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/gather.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

template <typename Word, typename Index>
__global__ void GatherKernel(GatherPlan plan, const Word* params, const Index* indices, Word* out, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerIndexElements()) {
    const std::int64_t n = plan.IndexOf(e);
    const std::int64_t index = indices[n];
    out[e] = cuda::CheckIndex(n, index, plan.axis_size, reports) ? params[plan.IndexedElement(e, index)] : Word{0};
  }
}

template <typename Word, typename Index> class GatherCuda final : public Kernel {
 public:
  explicit GatherCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(PlanGatherOf(setup.inputs[0].shape, setup.inputs[1].shape, setup.Get<GatherAttrs>().axis)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, plan_.PerIndexElements(), &GatherKernel<Word, Index>, plan_, inputs[0].As<Word>(),
                     inputs[1].As<Index>(), outputs[0].As<Word>(), reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }
  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[gather] index {} at position {} is outside [0, {})", bad->index, bad->position,
                                    plan_.axis_size));
    }
  }

 private:
  void* stream_;
  GatherPlan plan_;
  DeviceReports reports_;
};

std::unique_ptr<Kernel> MakeGather(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Word>() -> std::unique_ptr<Kernel> {
    if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<GatherCuda<Word, std::int64_t>>(setup);
    return std::make_unique<GatherCuda<Word, std::int32_t>>(setup);
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"gather", Device::Kind::kCuda, dtype}, &MakeGather);
}

}  // namespace
}  // namespace weir::internal
