// sparse_softmax_cross_entropy on the CPU: loss = logsumexp(row) - row[label], with the row
// maximum taken out of the exponent for stability (kernels/functors/softmax.hpp, the CUDA kernel's
// math too). The kernel key is the labels' dtype; the
// logits' dtype is picked when the task is created.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "kernels/functors/softmax.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename Label, typename T> class SparseSoftmaxCrossEntropyCpu final : public Kernel {
 public:
  explicit SparseSoftmaxCrossEntropyCpu(const KernelSetup& setup)
      : rows_(setup.inputs[1].shape[0]), classes_(setup.inputs[1].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[0].As<Label>();
    const T* logits = inputs[1].As<T>();
    T* loss = outputs[0].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::int64_t label = labels[r];
      if (label < 0 || label >= classes_) {
        throw KernelError(fmt::format("[sparse_softmax_cross_entropy] label {} at row {} is outside [0, {})", label,
                                      r, classes_));
      }
      loss[r] = SparseCrossEntropyRow(logits + r * classes_, classes_, label);
    }
  }

 private:
  std::int64_t rows_;
  std::int64_t classes_;
};

template <typename Label> std::unique_ptr<Kernel> MakeSparseSoftmaxCrossEntropy(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kF64) {
    return std::make_unique<SparseSoftmaxCrossEntropyCpu<Label, double>>(setup);
  }
  return std::make_unique<SparseSoftmaxCrossEntropyCpu<Label, float>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCpu, DType::kI32},
                 &MakeSparseSoftmaxCrossEntropy<std::int32_t>);
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCpu, DType::kI64},
                 &MakeSparseSoftmaxCrossEntropy<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
