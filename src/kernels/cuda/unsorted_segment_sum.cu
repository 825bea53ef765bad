// unsorted_segment_sum on CUDA: the output zeroed, then a thread per data element checks its id
// (CheckIndex reports a bad one into the Run's slot) and adds the element into its segment with an
// atomic add (kernels/cuda/atomic_add.cuh). An id out of range fails the call with the CPU kernel's error
// (DeviceReports).
#include <cstdint>
#include <memory>

#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/cuda/atomic_add.cuh"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/gather.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index>
__global__ void UnsortedSegmentSumKernel(GatherPlan plan, const T* data, const Index* ids, T* out, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerIndexElements()) {
    const std::int64_t n = plan.IndexOf(e);
    const std::int64_t id = ids[n];
    if (cuda::CheckIndex(n, id, plan.axis_size, reports)) cuda::AtomicAdd(out + plan.IndexedElement(e, id), data[e]);
  }
}

template <typename T, typename Index> class UnsortedSegmentSumCuda final : public Kernel {
 public:
  explicit UnsortedSegmentSumCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(PlanSegmentSumOf(setup.inputs[0].shape, setup.inputs[1].shape, setup.Get<UnsortedSegmentSumAttrs>())),
        out_bytes_(static_cast<std::size_t>(setup.outputs[0].NumBytes())) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Zero(stream_, outputs[0].data, out_bytes_);
    cuda::LaunchOver(stream_, plan_.PerIndexElements(), &UnsortedSegmentSumKernel<T, Index>, plan_, inputs[0].As<T>(),
                     inputs[1].As<Index>(), outputs[0].As<T>(), reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }
  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[unsorted_segment_sum] segment id {} at position {} is outside [0, {})", bad->index,
                                    bad->position, plan_.axis_size));
    }
  }

 private:
  void* stream_;
  GatherPlan plan_;
  std::size_t out_bytes_;
  DeviceReports reports_;
};

template <typename T> std::unique_ptr<Kernel> MakeUnsortedSegmentSum(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<UnsortedSegmentSumCuda<T, std::int64_t>>(setup);
  return std::make_unique<UnsortedSegmentSumCuda<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCuda, DType::kF32}, &MakeUnsortedSegmentSum<float>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCuda, DType::kF64}, &MakeUnsortedSegmentSum<double>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCuda, DType::kI32}, &MakeUnsortedSegmentSum<std::int32_t>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCuda, DType::kI64}, &MakeUnsortedSegmentSum<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
