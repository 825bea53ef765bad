// softmax_cross_entropy and its backward op on the CPU, one row (the last axis) at a time (the row math:
// kernels/functors/softmax.hpp, the CUDA kernels' too). With
// m = max(row) and lse = m + log(sum exp(row − m)) (the sum in double, no overflow),
// loss = sum_c labels_c · (lse − row_c); the backward op recomputes lse instead of storing it.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/functors/softmax.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

/// log(sum(exp(row))) without overflow.
template <typename T> class SoftmaxCrossEntropyCpu final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyCpu(const KernelSetup& setup)
      : rows_(setup.outputs[0].shape.NumElements()),
        classes_(setup.inputs[1].shape[setup.inputs[1].shape.Rank() - 1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* labels = inputs[0].As<T>();
    const T* logits = inputs[1].As<T>();
    T* loss = outputs[0].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) loss[r] = SoftmaxCrossEntropyRow(labels + r * classes_, logits + r * classes_, classes_);
  }

 private:
  std::int64_t rows_;
  std::int64_t classes_;
};

template <typename T> class SoftmaxCrossEntropyGradCpu final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyGradCpu(const KernelSetup& setup)
      : rows_(setup.inputs[2].shape.NumElements()),
        classes_(setup.inputs[1].shape[setup.inputs[1].shape.Rank() - 1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* labels = inputs[0].As<T>();
    const T* logits = inputs[1].As<T>();
    const T* dy = inputs[2].As<T>();
    T* dlabels = outputs[0].As<T>();
    T* dlogits = outputs[1].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::int64_t at = r * classes_;
      SoftmaxCrossEntropyGradRow(labels + at, logits + at, dy[r], dlabels + at, dlogits + at, classes_);
    }
  }

 private:
  std::int64_t rows_;
  std::int64_t classes_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"softmax_cross_entropy", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SoftmaxCrossEntropyCpu<float>>);
  RegisterKernel({"softmax_cross_entropy", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SoftmaxCrossEntropyCpu<double>>);
  RegisterKernel({"softmax_cross_entropy_grad", Device::Kind::kCpu, DType::kF32},
                 &MakeKernel<SoftmaxCrossEntropyGradCpu<float>>);
  RegisterKernel({"softmax_cross_entropy_grad", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<SoftmaxCrossEntropyGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
