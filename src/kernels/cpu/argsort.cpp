// argsort on the CPU: each row of the last axis sorted as indices, in the output, by
// kernels/functors/sort.hpp's order (ties in index order).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>

#include "kernels/functors/sort.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ArgSortCpu final : public Kernel {
 public:
  explicit ArgSortCpu(const KernelSetup& setup)
      : n_(setup.inputs[0].shape[setup.inputs[0].shape.Rank() - 1]),
        rows_(n_ == 0 ? 0 : setup.inputs[0].shape.NumElements() / n_), descending_(setup.Get<ArgSortAttrs>().descending) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      const T* row = x + r * n_;
      std::int32_t* order = outputs[0].As<std::int32_t>() + r * n_;
      std::iota(order, order + n_, 0);
      // SortsBefore breaks ties by index, a total order: std::sort gives the stable order without
      // std::stable_sort's buffer.
      std::sort(order, order + n_, [&](std::int32_t a, std::int32_t b) { return SortsBefore(row[a], a, row[b], b, descending_); });
    }
  }

 private:
  std::int64_t n_;
  std::int64_t rows_;
  bool descending_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ArgSortCpu<float>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ArgSortCpu<double>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ArgSortCpu<std::int32_t>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ArgSortCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
