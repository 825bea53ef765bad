// gather_nd on CUDA: a thread per output element finds its tuple's slice (kernels/attrs/
// nd_index_attrs.hpp), reports a bad index into the Run's slot (CheckIndex: the lowest position in
// indices wins, as the CPU kernel's first) and copies one word. An index out of range fails the call
// with the CPU kernel's error (DeviceReports). Elements move as words of their size: one kernel per size.
#include <cstdint>
#include <memory>

#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

template <typename Word, typename Index>
__global__ void GatherNdKernel(NdIndexPlan plan, const Word* params, const Index* indices, Word* out, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerTupleElements()) {
    std::int64_t bad = 0;
    const std::int64_t slice = plan.SliceOf(indices, e / plan.slice, &bad);
    if (slice < 0) cuda::CheckIndex(bad, indices[bad], plan.dims[bad % plan.depth], reports);
    out[e] = slice < 0 ? Word{0} : params[slice * plan.slice + e % plan.slice];
  }
}

template <typename Word, typename Index> class GatherNdCuda final : public Kernel {
 public:
  explicit GatherNdCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), plan_(PlanNdIndexOf(setup.inputs[0].shape, setup.inputs[1].shape)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, plan_.PerTupleElements(), &GatherNdKernel<Word, Index>, plan_, inputs[0].As<Word>(),
                     inputs[1].As<Index>(), outputs[0].As<Word>(), reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }
  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[gather_nd] index {} at position {} of indices is outside [0, {})", bad->index,
                                    bad->position, plan_.dims[bad->position % plan_.depth]));
    }
  }

 private:
  void* stream_;
  NdIndexPlan plan_;
  DeviceReports reports_;
};

std::unique_ptr<Kernel> MakeGatherNd(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Word>() -> std::unique_ptr<Kernel> {
    if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<GatherNdCuda<Word, std::int64_t>>(setup);
    return std::make_unique<GatherNdCuda<Word, std::int32_t>>(setup);
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"gather_nd", Device::Kind::kCuda, dtype}, &MakeGatherNd);
}

}  // namespace
}  // namespace weir::internal
