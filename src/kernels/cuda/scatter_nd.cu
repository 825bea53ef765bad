// The scatter_nd family on CUDA (graph/ops/scatter_nd.cpp): the output zeroed (scatter_nd) or copied
// from params (tensor_scatter_nd_add/_update) on the stream, then a thread per update element finds its
// tuple's slice (kernels/attrs/nd_index_attrs.hpp), reports a bad index into the Run's slot, and adds
// its element in with an atomic add (kernels/cuda/atomic_add.cuh) or writes it (a replacement: of
// tuples that repeat, one update wins, which one unspecified, as on the CPU's contract). An index out of
// range fails the call with the CPU kernel's error (DeviceReports); unlike the CPU kernel, the tuples
// in range are still written.
#include <cstdint>
#include <memory>

#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/cuda/atomic_add.cuh"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/scatter_nd_kernels.hpp"

namespace weir::internal {
namespace {

template <Scatter kHow, typename T, typename Index>
__global__ void ScatterNdKernel(NdIndexPlan plan, const Index* indices, const T* updates, T* out, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerTupleElements()) {
    std::int64_t bad = 0;
    const std::int64_t slice = plan.SliceOf(indices, e / plan.slice, &bad);
    if (slice < 0) {
      cuda::CheckIndex(bad, indices[bad], plan.dims[bad % plan.depth], reports);
      continue;
    }
    T* to = out + slice * plan.slice + e % plan.slice;
    if constexpr (kHow == Scatter::kReplace) {
      *to = updates[e];
    } else {
      cuda::AtomicAdd(to, updates[e]);
    }
  }
}

template <Scatter kHow, typename T, typename Index> class ScatterNdCuda final : public Kernel {
  static constexpr int kIndices = kScatterIndices<kHow>;

 public:
  explicit ScatterNdCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), plan_(PlanNdIndexOf(setup.outputs[0].shape, setup.inputs[kIndices].shape)),
        out_bytes_(static_cast<std::size_t>(setup.outputs[0].NumBytes())) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (kHow == Scatter::kIntoZeros) {
      cuda::Zero(stream_, outputs[0].data, out_bytes_);
    } else if (outputs[0].data != inputs[0].data && out_bytes_ > 0) {
      cuda::CopyOnDevice(stream_, outputs[0].data, inputs[0].data, out_bytes_);
    }
    cuda::LaunchOver(stream_, plan_.PerTupleElements(), &ScatterNdKernel<kHow, T, Index>, plan_,
                     inputs[kIndices].As<Index>(), inputs[kIndices + 1].As<T>(), outputs[0].As<T>(), reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }
  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[{}] index {} at position {} of indices is outside [0, {})", ScatterOpName<kHow>(),
                                    bad->index, bad->position, plan_.dims[bad->position % plan_.depth]));
    }
  }

 private:
  void* stream_;
  NdIndexPlan plan_;
  std::size_t out_bytes_;
  DeviceReports reports_;
};

WEIR_REGISTER_KERNELS { RegisterScatterNdKernels<ScatterNdCuda>(Device::Kind::kCuda); }

}  // namespace
}  // namespace weir::internal
