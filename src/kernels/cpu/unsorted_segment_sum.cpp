// unsorted_segment_sum on the CPU: the output zeroed, then each data row of `inner` elements added
// into its id's segment, in data order (kernels/functors/gather.hpp), after every id is checked.
#include <algorithm>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index> class UnsortedSegmentSumCpu final : public Kernel {
 public:
  explicit UnsortedSegmentSumCpu(const KernelSetup& setup)
      : plan_(PlanSegmentSumOf(setup.inputs[0].shape, setup.inputs[1].shape, setup.Get<UnsortedSegmentSumAttrs>())),
        out_count_(setup.outputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* data = inputs[0].As<T>();
    const Index* ids = inputs[1].As<Index>();
    T* out = outputs[0].As<T>();
    for (std::int64_t n = 0; n < plan_.count; ++n) {
      if (ids[n] < 0 || ids[n] >= plan_.axis_size) {
        throw KernelError(fmt::format("[unsorted_segment_sum] segment id {} at position {} is outside [0, {})", ids[n], n,
                                      plan_.axis_size));
      }
    }
    std::fill(out, out + out_count_, T{0});
    for (std::int64_t o = 0; o < plan_.outer; ++o) {
      for (std::int64_t n = 0; n < plan_.count; ++n) {
        const T* row = data + (o * plan_.count + n) * plan_.inner;
        T* segment = out + (o * plan_.axis_size + ids[n]) * plan_.inner;
        for (std::int64_t i = 0; i < plan_.inner; ++i) segment[i] += row[i];
      }
    }
  }

 private:
  GatherPlan plan_;
  std::int64_t out_count_;
};

template <typename T> std::unique_ptr<Kernel> MakeUnsortedSegmentSum(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<UnsortedSegmentSumCpu<T, std::int64_t>>(setup);
  return std::make_unique<UnsortedSegmentSumCpu<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCpu, DType::kF32}, &MakeUnsortedSegmentSum<float>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCpu, DType::kF64}, &MakeUnsortedSegmentSum<double>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCpu, DType::kI32}, &MakeUnsortedSegmentSum<std::int32_t>);
  RegisterKernel({"unsorted_segment_sum", Device::Kind::kCpu, DType::kI64}, &MakeUnsortedSegmentSum<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
