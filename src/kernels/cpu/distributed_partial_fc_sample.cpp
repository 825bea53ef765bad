// distributed_partial_fc_sample on the CPU: each of this device's parts drawn in turn
// (kernels/functors/partial_fc.hpp), then each label placed, then the sampled rows copied.
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/attrs/partial_fc_attrs.hpp"
#include "kernels/functors/partial_fc.hpp"
#include "kernels/kernel.hpp"
#include "kernels/partial_fc_parts.hpp"

namespace weir::internal {
namespace {

template <typename Label> class PartialFcSampleCpu final : public Kernel {
 public:
  explicit PartialFcSampleCpu(const KernelSetup& setup)
      : op_name_(setup.op_name), attrs_(setup.Get<PartialFcSampleAttrs>()), local_(LocalPartsOf(setup)),
        position_(static_cast<std::size_t>(setup.inputs[0].shape[0])), pool_(position_.size()),
        row_bytes_(static_cast<std::size_t>(setup.inputs[0].shape[1]) * SizeOf(setup.inputs[0].dtype)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[1].As<Label>();
    const std::int64_t batch = inputs[1].NumElements();
    Label* sampled = outputs[1].As<Label>();
    for (std::int64_t b = 0; b < batch; ++b) {
      if (labels[b] < 0 || labels[b] >= attrs_.num_classes) {
        throw KernelError(PartialFcError(op_name_, b, labels[b], batch, attrs_.num_classes, local_.part.samples));
      }
    }
    const std::uint64_t call = calls_++;
    for (std::int64_t k = 0; k < local_.count; ++k) {
      const PartialFcPart part = local_.At(k);
      const std::int64_t positives =
          SamplePartialFcPart(labels, batch, part, attrs_.seed, call, position_.data() + k * part.classes,
                              pool_.data() + k * part.classes, sampled + k * part.samples);
      if (positives > part.samples) {
        throw KernelError(PartialFcError(op_name_, batch + part.index, positives, batch, attrs_.num_classes, part.samples));
      }
    }
    Label* mapped = outputs[0].As<Label>();
    for (std::int64_t b = 0; b < batch; ++b) mapped[b] = PlaceLabel(labels[b], local_.part, local_.count, position_.data());
    const auto* weight = static_cast<const std::uint8_t*>(inputs[0].data);
    auto* out = static_cast<std::uint8_t*>(outputs[2].data);
    for (std::int64_t r = 0; r < outputs[1].NumElements() && row_bytes_ > 0; ++r) {
      const std::int64_t row = static_cast<std::int64_t>(sampled[r]) - local_.part.first_class;
      std::memcpy(out + static_cast<std::size_t>(r) * row_bytes_, weight + static_cast<std::size_t>(row) * row_bytes_, row_bytes_);
    }
  }

 private:
  std::string op_name_;
  PartialFcSampleAttrs attrs_;
  LocalParts local_;
  std::vector<std::int64_t> position_;
  std::vector<std::int64_t> pool_;
  std::size_t row_bytes_;
  std::uint64_t calls_ = 0;
};

std::unique_ptr<Kernel> MakePartialFcSample(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<PartialFcSampleCpu<std::int64_t>>(setup);
  return std::make_unique<PartialFcSampleCpu<std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    RegisterKernel({"distributed_partial_fc_sample", Device::Kind::kCpu, dtype}, &MakePartialFcSample);
  }
}

}  // namespace
}  // namespace weir::internal
