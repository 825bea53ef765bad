// combined_margin_loss and its gradient on the CPU: the rows copied through, each row's label entry
// through the margin (kernels/functors/combined_margin.hpp, the CUDA kernels' math too). Every label is
// checked before anything is written. The kernel key is x's dtype (dy's for the gradient); the labels'
// is picked when the task is created.
#include <cstdint>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "kernels/functors/combined_margin.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

// kGrad: (dy, x, labels) -> dx; else (x, labels) -> y.
template <typename T, typename Label, bool kGrad> class CombinedMarginLossCpu final : public Kernel {
 public:
  static constexpr const char* kOp = kGrad ? "combined_margin_loss_grad" : "combined_margin_loss";

  explicit CombinedMarginLossCpu(const KernelSetup& setup)
      : margin_(std::any_cast<const CombinedMarginAttrs&>(*setup.attrs)),
        rows_(setup.outputs[0].shape[0]),
        classes_(setup.outputs[0].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* through = inputs[0].As<T>();  // y starts as x, dx as dy
    const T* x = inputs[kGrad ? 1 : 0].As<T>();
    const Label* labels = inputs[kGrad ? 2 : 1].As<Label>();
    T* out = outputs[0].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      if (labels[r] < 0 || labels[r] >= classes_) {
        throw KernelError(fmt::format("[{}] label {} at row {} is outside [0, {})", kOp, labels[r], r, classes_));
      }
    }
    if (rows_ * classes_ > 0) std::memcpy(out, through, static_cast<std::size_t>(rows_ * classes_) * sizeof(T));
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::int64_t i = r * classes_ + static_cast<std::int64_t>(labels[r]);
      out[i] = kGrad ? through[i] * margin_.Derivative(x[i]) : margin_.Forward(x[i]);
    }
  }

 private:
  CombinedMargin<T> margin_;
  std::int64_t rows_;
  std::int64_t classes_;
};

template <typename T, bool kGrad> std::unique_ptr<Kernel> Make(const KernelSetup& setup) {
  if (setup.inputs[kGrad ? 2 : 1].dtype == DType::kI64) return std::make_unique<CombinedMarginLossCpu<T, std::int64_t, kGrad>>(setup);
  return std::make_unique<CombinedMarginLossCpu<T, std::int32_t, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"combined_margin_loss", Device::Kind::kCpu, DType::kF32}, &Make<float, false>);
  RegisterKernel({"combined_margin_loss", Device::Kind::kCpu, DType::kF64}, &Make<double, false>);
  RegisterKernel({"combined_margin_loss_grad", Device::Kind::kCpu, DType::kF32}, &Make<float, true>);
  RegisterKernel({"combined_margin_loss_grad", Device::Kind::kCpu, DType::kF64}, &Make<double, true>);
}

}  // namespace
}  // namespace weir::internal
