// distributed_partial_fc_sample on CUDA (kernels/functors/partial_fc.hpp, the CPU kernel's draws): a
// thread per label checks it; a thread per part of this device draws the part's samples (a serial
// pass over its classes, as the CPU's); a thread per label places it; a thread per element copies the
// sampled rows. A bad label or a part with more positive classes than samples fails the call with
// the CPU kernel's error (DeviceReports: a label at its position, a part at the batch size plus its
// number). The call count lives on the device, so a CUDA graph replays the draws right.
#include <cstdint>
#include <memory>

#include "kernels/attrs/partial_fc_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/partial_fc.hpp"
#include "kernels/partial_fc_parts.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

template <typename Label>
__global__ void CheckLabelsKernel(const Label* labels, std::int64_t batch, std::int64_t num_classes, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(b, batch) { cuda::CheckIndex(b, static_cast<std::int64_t>(labels[b]), num_classes, reports); }
}

template <typename Label>
__global__ void SamplePartsKernel(const Label* labels, std::int64_t batch, PartialFcPart first, std::int64_t parts,
                                  std::uint64_t seed, const std::int64_t* calls, std::int64_t* position, std::int64_t* pool,
                                  Label* sampled, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(k, parts) {
    PartialFcPart part = first;
    part.index += k;
    part.first_class += k * first.classes;
    const std::int64_t positives = SamplePartialFcPart(labels, batch, part, seed, static_cast<std::uint64_t>(*calls),
                                                       position + k * first.classes, pool + k * first.classes,
                                                       sampled + k * first.samples);
    cuda::CheckIndex(batch + part.index, positives, part.samples + 1, reports);
  }
}

template <typename Label>
__global__ void PlaceLabelsKernel(const Label* labels, std::int64_t batch, PartialFcPart first, std::int64_t parts,
                                  const std::int64_t* position, Label* mapped) {
  WEIR_FOR_EACH_ELEMENT(b, batch) { mapped[b] = PlaceLabel(labels[b], first, parts, position); }
}

// Sampled rows whose part failed its draw hold no class: they copy row 0.
template <typename Word, typename Label>
__global__ void CopyRowsKernel(const Word* weight, const Label* sampled, std::int64_t count, std::int64_t width,
                               std::int64_t first_class, std::int64_t rows, Word* out) {
  WEIR_FOR_EACH_ELEMENT(e, count) {
    const std::int64_t row = static_cast<std::int64_t>(sampled[e / width]) - first_class;
    out[e] = weight[(row >= 0 && row < rows ? row : 0) * width + e % width];
  }
}

template <typename Word, typename Label> class PartialFcSampleCuda final : public Kernel {
 public:
  explicit PartialFcSampleCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), op_name_(setup.op_name), attrs_(setup.Get<PartialFcSampleAttrs>()),
        local_(LocalPartsOf(setup)), rows_(setup.inputs[0].shape[0]), width_(setup.inputs[0].shape[1]),
        batch_(setup.inputs[1].shape[0]),
        scratch_(setup.device.index, static_cast<std::size_t>(2 * rows_ + 1) * sizeof(std::int64_t)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[1].As<Label>();
    std::int64_t* calls = scratch_.As<std::int64_t>();
    std::int64_t* position = calls + 1;
    Label* sampled = outputs[1].As<Label>();
    cuda::LaunchOver(stream_, batch_, &CheckLabelsKernel<Label>, labels, batch_, attrs_.num_classes, reports_.Ring());
    cuda::LaunchOver(stream_, local_.count, &SamplePartsKernel<Label>, labels, batch_, local_.part, local_.count,
                     attrs_.seed, static_cast<const std::int64_t*>(calls), position, position + rows_, sampled,
                     reports_.Ring());
    cuda::LaunchOver(stream_, batch_, &PlaceLabelsKernel<Label>, labels, batch_, local_.part, local_.count,
                     static_cast<const std::int64_t*>(position), outputs[0].As<Label>());
    const std::int64_t count = outputs[2].NumElements();
    cuda::LaunchOver(stream_, count, &CopyRowsKernel<Word, Label>, inputs[0].As<Word>(), static_cast<const Label*>(sampled),
                     count, width_, local_.part.first_class, rows_, outputs[2].As<Word>());
    cuda::Increment(stream_, calls);  // the next Run's call number, after this Run's draws
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(PartialFcError(op_name_, bad->position, bad->index, batch_, attrs_.num_classes, local_.part.samples));
    }
  }

 private:
  void* stream_;
  std::string op_name_;
  PartialFcSampleAttrs attrs_;
  LocalParts local_;
  std::int64_t rows_;
  std::int64_t width_;
  std::int64_t batch_;
  DeviceScratch scratch_;  // the Runs so far (zero to start with), then each class's position, then the draw pool
  DeviceReports reports_;
};

std::unique_ptr<Kernel> MakePartialFcSampleCuda(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Word>() -> std::unique_ptr<Kernel> {
    if (setup.inputs[1].dtype == DType::kI64) return std::make_unique<PartialFcSampleCuda<Word, std::int64_t>>(setup);
    return std::make_unique<PartialFcSampleCuda<Word, std::int32_t>>(setup);
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    RegisterKernel({"distributed_partial_fc_sample", Device::Kind::kCuda, dtype}, &MakePartialFcSampleCuda);
  }
}

}  // namespace
}  // namespace weir::internal
