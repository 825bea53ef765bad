// sparse_softmax_cross_entropy and its gradient on CUDA: a thread per row running the CPU kernels' row
// math (kernels/functors/softmax.hpp); a label out of range fails the call with the CPU's error,
// reported from the device through DeviceReports (lowest row first). The kernel key is the labels'
// dtype; the logits' is picked at creation.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/softmax.hpp"

namespace weir::internal {
namespace {

template <typename Label, typename T>
__global__ void CrossEntropyKernel(const Label* labels, const T* logits, T* loss, std::int64_t rows, std::int64_t classes,
                                   cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(r, rows) {
    const std::int64_t label = labels[r];
    if (cuda::CheckIndex(r, label, classes, reports)) loss[r] = SparseCrossEntropyRow(logits + r * classes, classes, label);
  }
}

template <typename Label, typename T>
__global__ void CrossEntropyGradKernel(const Label* labels, const T* logits, const T* dy, T* dlogits, std::int64_t rows,
                                       std::int64_t classes, cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(r, rows) {
    const std::int64_t label = labels[r];
    if (cuda::CheckIndex(r, label, classes, reports)) {
      SparseCrossEntropyGradRow(logits + r * classes, classes, label, dy[r], dlogits + r * classes);
    }
  }
}

// kGrad: (labels, logits, dy) -> dlogits; else (labels, logits) -> loss.
template <typename Label, typename T, bool kGrad> class SparseCrossEntropyCuda final : public Kernel {
 public:
  static constexpr const char* kOp = kGrad ? "sparse_softmax_cross_entropy_grad" : "sparse_softmax_cross_entropy";

  explicit SparseCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), rows_(setup.inputs[1].shape[0]), classes_(setup.inputs[1].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[0].As<Label>();
    const T* logits = inputs[1].As<T>();
    if constexpr (kGrad) {
      cuda::LaunchOver(stream_, rows_, &CrossEntropyGradKernel<Label, T>, labels, logits, inputs[2].As<T>(),
                       outputs[0].As<T>(), rows_, classes_, reports_.Ring());
    } else {
      cuda::LaunchOver(stream_, rows_, &CrossEntropyKernel<Label, T>, labels, logits, outputs[0].As<T>(), rows_, classes_,
                       reports_.Ring());
    }
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[{}] label {} at row {} is outside [0, {})", kOp, bad->index, bad->position, classes_));
    }
  }

 private:
  void* stream_;
  std::int64_t rows_;
  std::int64_t classes_;
  DeviceReports reports_;
};

template <typename Label, bool kGrad> std::unique_ptr<Kernel> Make(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kF64) return std::make_unique<SparseCrossEntropyCuda<Label, double, kGrad>>(setup);
  return std::make_unique<SparseCrossEntropyCuda<Label, float, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCuda, DType::kI32}, &Make<std::int32_t, false>);
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCuda, DType::kI64}, &Make<std::int64_t, false>);
  RegisterKernel({"sparse_softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kI32}, &Make<std::int32_t, true>);
  RegisterKernel({"sparse_softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kI64}, &Make<std::int64_t, true>);
}

}  // namespace
}  // namespace weir::internal
