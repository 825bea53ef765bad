// ctc_loss and its gradient on the CPU: each example on its own through kernels/functors/ctc.hpp
// (the examples split over the intra-op pool). The kernel key is log_probs' dtype; the integer
// inputs' is picked at creation.
#include <cstdint>
#include <memory>

#include "common/intra_op_pool.hpp"
#include "kernels/functors/ctc.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

// Checks every example's lengths and targets, lowest position first, as the GPU's kernels report.
template <typename T, typename Index> void CheckExamples(const CtcInputs<T, Index>& in) {
  for (std::int64_t b = 0; b < in.sizes.batch; ++b) {
    const std::int64_t lengths[2] = {in.input_lengths[b], in.target_lengths[b]};
    for (std::int64_t k = 0; k < 2; ++k) {
      if (lengths[k] < 0 || lengths[k] >= CtcItemBound(in.sizes, k)) {
        throw KernelError(CtcItemError(in.sizes, b * in.sizes.Items() + k, lengths[k]));
      }
    }
    for (std::int64_t s = 0; s < lengths[1]; ++s) {
      const std::int64_t target = in.targets[b * in.sizes.target_length + s];
      if (target < 0 || target >= in.sizes.classes) {
        throw KernelError(CtcItemError(in.sizes, b * in.sizes.Items() + 2 + s, target));
      }
    }
  }
}

template <typename T, typename Index, bool kGrad> class CtcLossCpu final : public Kernel {
 public:
  explicit CtcLossCpu(const KernelSetup& setup)
      : sizes_{setup.inputs[kGrad ? 1 : 0].shape[0], setup.inputs[kGrad ? 1 : 0].shape[1],
               setup.inputs[kGrad ? 1 : 0].shape[2], setup.inputs[kGrad ? 2 : 1].shape[1]},
        attrs_(setup.Get<CtcLossAttrs>()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    constexpr int kFirst = kGrad ? 1 : 0;  // where log_probs is
    const CtcInputs<T, Index> in{inputs[kFirst].As<T>(), inputs[kFirst + 1].As<Index>(), inputs[kFirst + 2].As<Index>(),
                                 inputs[kFirst + 3].As<Index>(), sizes_, attrs_.blank};
    CheckExamples(in);
    const std::int64_t per_example = sizes_.steps * sizes_.States();
    if constexpr (kGrad) {
      const T* dloss = inputs[0].As<T>();
      const T* alpha = inputs[5].As<T>();
      const T* beta = inputs[6].As<T>();
      T* dlog_probs = outputs[0].As<T>();
      ParallelFor(static_cast<int>(sizes_.batch), [&](int b) {
        const CtcExample<T, Index> e = in.Example(b);
        for (std::int64_t t = 0; t < sizes_.steps; ++t) {
          for (std::int64_t c = 0; c < sizes_.classes; ++c) {
            dlog_probs[(t * sizes_.batch + b) * sizes_.classes + c] =
                CtcGradient(e, alpha + b * per_example, beta + b * per_example, dloss[b], t, c, attrs_.zero_infinity);
          }
        }
      });
    } else {
      T* loss = outputs[0].As<T>();
      T* alpha = outputs[1].As<T>();
      T* beta = outputs[2].As<T>();
      ParallelFor(static_cast<int>(sizes_.batch), [&](int b) {
        const CtcExample<T, Index> e = in.Example(b);
        const T log_likelihood = CtcForwardBackward(e, alpha + b * per_example, beta + b * per_example);
        loss[b] = CtcLossOf(log_likelihood, attrs_.zero_infinity);
      });
    }
  }

 private:
  CtcSizes sizes_;
  CtcLossAttrs attrs_;
};

template <typename T, bool kGrad> std::unique_ptr<Kernel> MakeCtcLoss(const KernelSetup& setup) {
  if (setup.inputs[kGrad ? 2 : 1].dtype == DType::kI64) return std::make_unique<CtcLossCpu<T, std::int64_t, kGrad>>(setup);
  return std::make_unique<CtcLossCpu<T, std::int32_t, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ctc_loss", Device::Kind::kCpu, DType::kF32}, &MakeCtcLoss<float, false>);
  RegisterKernel({"ctc_loss", Device::Kind::kCpu, DType::kF64}, &MakeCtcLoss<double, false>);
  RegisterKernel({"ctc_loss_grad", Device::Kind::kCpu, DType::kF32}, &MakeCtcLoss<float, true>);
  RegisterKernel({"ctc_loss_grad", Device::Kind::kCpu, DType::kF64}, &MakeCtcLoss<double, true>);
}

}  // namespace
}  // namespace weir::internal
