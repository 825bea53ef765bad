// softmax_cross_entropy and its backward op on the CPU, one row (the last axis) at a time. With
// m = max(row) and lse = m + log(sum exp(row − m)) (the sum in double, no overflow),
// loss = sum_c labels_c · (lse − row_c); the backward op recomputes lse instead of storing it.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

/// log(sum(exp(row))) without overflow.
template <typename T> double LogSumExp(const T* row, std::int64_t classes) {
  const double max = static_cast<double>(*std::max_element(row, row + classes));
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - max);
  return max + std::log(sum);
}

template <typename T> class SoftmaxCrossEntropyCpu final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyCpu(const KernelSetup& setup)
      : rows_(setup.outputs[0].shape.NumElements()),
        classes_(setup.inputs[1].shape[setup.inputs[1].shape.Rank() - 1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* labels = inputs[0].As<T>();
    const T* logits = inputs[1].As<T>();
    T* loss = outputs[0].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      const T* z = labels + r * classes_;
      const T* x = logits + r * classes_;
      const double lse = LogSumExp(x, classes_);
      double sum = 0;
      for (std::int64_t c = 0; c < classes_; ++c) sum += static_cast<double>(z[c]) * (lse - static_cast<double>(x[c]));
      loss[r] = static_cast<T>(sum);
    }
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
      const T* z = labels + r * classes_;
      const T* x = logits + r * classes_;
      T* dz = dlabels + r * classes_;
      T* dx = dlogits + r * classes_;
      const double lse = LogSumExp(x, classes_);
      double label_sum = 0;
      for (std::int64_t c = 0; c < classes_; ++c) label_sum += static_cast<double>(z[c]);
      const double g = static_cast<double>(dy[r]);
      const double softmax_scale = label_sum * g;
      for (std::int64_t c = 0; c < classes_; ++c) {
        const double log_softmax = static_cast<double>(x[c]) - lse;
        dz[c] = static_cast<T>(-log_softmax * g);
        dx[c] = static_cast<T>(std::exp(log_softmax) * softmax_scale - static_cast<double>(z[c]) * g);
      }
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
