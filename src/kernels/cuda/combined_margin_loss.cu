// combined_margin_loss and its gradient on CUDA: a thread per element, the label entry of each row
// through the CPU kernels' margin math (kernels/functors/combined_margin.hpp), the others copied
// through; a label out of range fails the call with the CPU's error, reported from the device through
// DeviceReports (lowest row first). The kernel key is x's dtype (dy's for the gradient); the labels'
// is picked at creation.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/combined_margin.hpp"

namespace weir::internal {
namespace {

// through: x for the loss, dy for its gradient; x: the cosines the margin reads.
template <typename T, typename Label, bool kGrad>
__global__ void CombinedMarginKernel(const T* through, const T* x, const Label* labels, T* out, std::int64_t count,
                                     std::int64_t classes, CombinedMargin<T> margin, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const std::int64_t row = i / classes;
    const std::int64_t column = i - row * classes;
    const std::int64_t label = labels[row];
    if (column == 0) cuda::CheckIndex(row, label, classes, reports);
    if (column != label) {
      out[i] = through[i];
    } else if constexpr (kGrad) {
      out[i] = through[i] * margin.Derivative(x[i]);
    } else {
      out[i] = margin.Forward(x[i]);
    }
  }
}

template <typename T, typename Label, bool kGrad> class CombinedMarginLossCuda final : public Kernel {
 public:
  static constexpr const char* kOp = kGrad ? "combined_margin_loss_grad" : "combined_margin_loss";

  explicit CombinedMarginLossCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        margin_(std::any_cast<const CombinedMarginAttrs&>(*setup.attrs)),
        count_(setup.outputs[0].shape.NumElements()),
        classes_(setup.outputs[0].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &CombinedMarginKernel<T, Label, kGrad>, inputs[0].As<T>(), inputs[kGrad ? 1 : 0].As<T>(),
                     inputs[kGrad ? 2 : 1].As<Label>(), outputs[0].As<T>(), count_, classes_, margin_, reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[{}] label {} at row {} is outside [0, {})", kOp, bad->index, bad->position, classes_));
    }
  }

 private:
  void* stream_;
  CombinedMargin<T> margin_;
  std::int64_t count_;
  std::int64_t classes_;
  DeviceReports reports_;
};

template <typename T, bool kGrad> std::unique_ptr<Kernel> Make(const KernelSetup& setup) {
  if (setup.inputs[kGrad ? 2 : 1].dtype == DType::kI64) return std::make_unique<CombinedMarginLossCuda<T, std::int64_t, kGrad>>(setup);
  return std::make_unique<CombinedMarginLossCuda<T, std::int32_t, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"combined_margin_loss", Device::Kind::kCuda, DType::kF32}, &Make<float, false>);
  RegisterKernel({"combined_margin_loss", Device::Kind::kCuda, DType::kF64}, &Make<double, false>);
  RegisterKernel({"combined_margin_loss_grad", Device::Kind::kCuda, DType::kF32}, &Make<float, true>);
  RegisterKernel({"combined_margin_loss_grad", Device::Kind::kCuda, DType::kF64}, &Make<double, true>);
}

}  // namespace
}  // namespace weir::internal
