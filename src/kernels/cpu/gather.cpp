// gather on the CPU: a row of `inner` elements copied per (outer block, index), after every index is
// checked (kernels/functors/gather.hpp). Elements are moved as bytes, so one kernel serves every dtype.
#include <cstdint>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename Index> class GatherCpu final : public Kernel {
 public:
  explicit GatherCpu(const KernelSetup& setup)
      : plan_(PlanGatherOf(setup.inputs[0].shape, setup.inputs[1].shape, setup.Get<GatherAttrs>().axis)),
        row_bytes_(static_cast<std::size_t>(plan_.inner) * SizeOf(setup.inputs[0].dtype)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* params = static_cast<const std::byte*>(inputs[0].data);
    const Index* indices = inputs[1].As<Index>();
    auto* out = static_cast<std::byte*>(outputs[0].data);
    for (std::int64_t n = 0; n < plan_.count; ++n) {
      if (indices[n] < 0 || indices[n] >= plan_.axis_size) {
        throw KernelError(fmt::format("[gather] index {} at position {} is outside [0, {})", indices[n], n, plan_.axis_size));
      }
    }
    if (row_bytes_ == 0) return;
    for (std::int64_t o = 0; o < plan_.outer; ++o) {
      for (std::int64_t n = 0; n < plan_.count; ++n) {
        const std::int64_t from = o * plan_.axis_size + indices[n];
        std::memcpy(out + static_cast<std::size_t>(o * plan_.count + n) * row_bytes_,
                    params + static_cast<std::size_t>(from) * row_bytes_, row_bytes_);
      }
    }
  }

 private:
  GatherPlan plan_;
  std::size_t row_bytes_;
};

std::unique_ptr<Kernel> MakeGather(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<GatherCpu<std::int64_t>>(setup);
  return std::make_unique<GatherCpu<std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"gather", Device::Kind::kCpu, dtype}, &MakeGather);
}

}  // namespace
}  // namespace weir::internal
