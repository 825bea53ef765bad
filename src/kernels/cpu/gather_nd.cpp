// gather_nd on the CPU: every tuple of indices is checked first (a bad one fails the call, naming its
// position in indices), then each tuple's slice is copied (kernels/attrs/nd_index_attrs.hpp). Elements
// are moved as bytes, so one kernel serves every dtype.
#include <cstdint>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename Index> class GatherNdCpu final : public Kernel {
 public:
  explicit GatherNdCpu(const KernelSetup& setup)
      : plan_(PlanNdIndexOf(setup.inputs[0].shape, setup.inputs[1].shape)),
        slice_bytes_(static_cast<std::size_t>(plan_.slice) * SizeOf(setup.inputs[0].dtype)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* params = static_cast<const std::byte*>(inputs[0].data);
    const Index* indices = inputs[1].As<Index>();
    auto* out = static_cast<std::byte*>(outputs[0].data);
    for (std::int64_t n = 0; n < plan_.tuples; ++n) {
      std::int64_t bad = 0;
      const std::int64_t slice = plan_.SliceOf(indices, n, &bad);
      if (slice < 0) {
        throw KernelError(fmt::format("[gather_nd] index {} at position {} of indices is outside [0, {})", indices[bad],
                                      bad, plan_.dims[bad % plan_.depth]));
      }
      if (slice_bytes_ > 0) {
        std::memcpy(out + static_cast<std::size_t>(n) * slice_bytes_, params + static_cast<std::size_t>(slice) * slice_bytes_,
                    slice_bytes_);
      }
    }
  }

 private:
  NdIndexPlan plan_;
  std::size_t slice_bytes_;
};

std::unique_ptr<Kernel> MakeGatherNd(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<GatherNdCpu<std::int64_t>>(setup);
  return std::make_unique<GatherNdCpu<std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"gather_nd", Device::Kind::kCpu, dtype}, &MakeGatherNd);
}

}  // namespace
}  // namespace weir::internal
