// ctc_loss and its gradient on CUDA through kernels/functors/ctc.hpp: the loss a thread per example
// (its steps one after the other), the gradient a thread per element of log_probs. A length or
// target out of range fails the call with the CPU kernels' error, reported from the device
// (DeviceReports, lowest position first); that example's results are not computed.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/ctc.hpp"

namespace weir::internal {
namespace {

// Example b's checks (CtcItemBound); false, with a report, where one fails.
template <typename T, typename Index>
__device__ bool CheckExample(const CtcInputs<T, Index>& in, std::int64_t b, const cuda::ReportRing& reports) {
  const std::int64_t base = b * in.sizes.Items();
  const std::int64_t length = in.target_lengths[b];
  bool ok = cuda::CheckIndex(base, in.input_lengths[b], CtcItemBound(in.sizes, 0), reports);
  ok = cuda::CheckIndex(base + 1, length, CtcItemBound(in.sizes, 1), reports) && ok;
  for (std::int64_t s = 0; ok && s < length; ++s) {
    ok = cuda::CheckIndex(base + 2 + s, in.targets[b * in.sizes.target_length + s], in.sizes.classes, reports);
  }
  return ok;
}

template <typename T, typename Index>
__global__ void CtcLossKernel(CtcInputs<T, Index> in, bool zero_infinity, T* loss, T* alpha, T* beta,
                              cuda::ReportRing reports) {
  const std::int64_t per_example = in.sizes.steps * in.sizes.States();
  WEIR_FOR_EACH_ELEMENT(b, in.sizes.batch) {
    if (!CheckExample(in, b, reports)) continue;
    loss[b] = CtcLossOf(CtcForwardBackward(in.Example(b), alpha + b * per_example, beta + b * per_example), zero_infinity);
  }
}

template <typename T, typename Index>
__global__ void CtcLossGradKernel(CtcInputs<T, Index> in, bool zero_infinity, const T* dloss, const T* alpha,
                                  const T* beta, T* dlog_probs, cuda::ReportRing reports) {
  const std::int64_t per_example = in.sizes.steps * in.sizes.States();
  const std::int64_t count = in.sizes.steps * in.sizes.batch * in.sizes.classes;
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const std::int64_t c = i % in.sizes.classes;
    const std::int64_t b = (i / in.sizes.classes) % in.sizes.batch;
    const std::int64_t t = i / (in.sizes.classes * in.sizes.batch);
    if (!CheckExample(in, b, reports)) continue;
    dlog_probs[i] = CtcGradient(in.Example(b), alpha + b * per_example, beta + b * per_example, dloss[b], t, c,
                                zero_infinity);
  }
}

template <typename T, typename Index, bool kGrad> class CtcLossCuda final : public Kernel {
 public:
  explicit CtcLossCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        sizes_{setup.inputs[kGrad ? 1 : 0].shape[0], setup.inputs[kGrad ? 1 : 0].shape[1],
               setup.inputs[kGrad ? 1 : 0].shape[2], setup.inputs[kGrad ? 2 : 1].shape[1]},
        attrs_(setup.Get<CtcLossAttrs>()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    constexpr int kFirst = kGrad ? 1 : 0;  // where log_probs is
    const CtcInputs<T, Index> in{inputs[kFirst].As<T>(), inputs[kFirst + 1].As<Index>(), inputs[kFirst + 2].As<Index>(),
                                 inputs[kFirst + 3].As<Index>(), sizes_, attrs_.blank};
    if constexpr (kGrad) {
      cuda::LaunchOver(stream_, sizes_.steps * sizes_.batch * sizes_.classes, &CtcLossGradKernel<T, Index>, in,
                       attrs_.zero_infinity, inputs[0].As<T>(), inputs[5].As<T>(), inputs[6].As<T>(), outputs[0].As<T>(),
                       reports_.Ring());
    } else {
      cuda::LaunchOver(stream_, sizes_.batch, &CtcLossKernel<T, Index>, in, attrs_.zero_infinity, outputs[0].As<T>(),
                       outputs[1].As<T>(), outputs[2].As<T>(), reports_.Ring());
    }
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) throw KernelError(CtcItemError(sizes_, bad->position, bad->index));
  }

 private:
  void* stream_;
  CtcSizes sizes_;
  CtcLossAttrs attrs_;
  DeviceReports reports_;
};

template <typename T, bool kGrad> std::unique_ptr<Kernel> MakeCtcLoss(const KernelSetup& setup) {
  if (setup.inputs[kGrad ? 2 : 1].dtype == DType::kI64) return std::make_unique<CtcLossCuda<T, std::int64_t, kGrad>>(setup);
  return std::make_unique<CtcLossCuda<T, std::int32_t, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ctc_loss", Device::Kind::kCuda, DType::kF32}, &MakeCtcLoss<float, false>);
  RegisterKernel({"ctc_loss", Device::Kind::kCuda, DType::kF64}, &MakeCtcLoss<double, false>);
  RegisterKernel({"ctc_loss_grad", Device::Kind::kCuda, DType::kF32}, &MakeCtcLoss<float, true>);
  RegisterKernel({"ctc_loss_grad", Device::Kind::kCuda, DType::kF64}, &MakeCtcLoss<double, true>);
}

}  // namespace
}  // namespace weir::internal
