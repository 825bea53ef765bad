// argsort on the CPU: each row of the last axis sorted as indices by kernels/functors/sort.hpp's order
// (std::stable_sort: ties keep index order, as the comparator also says).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "kernels/functors/sort.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ArgSortCpu final : public Kernel {
 public:
  explicit ArgSortCpu(const KernelSetup& setup)
      : n_(setup.inputs[0].shape.Rank() == 0 ? 1 : setup.inputs[0].shape[setup.inputs[0].shape.Rank() - 1]),
        rows_(n_ == 0 ? 0 : setup.inputs[0].shape.NumElements() / n_), descending_(setup.Get<ArgSortAttrs>().descending),
        order_(static_cast<std::size_t>(n_)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    auto* out = outputs[0].As<std::int32_t>();
    for (std::int64_t r = 0; r < rows_; ++r) {
      const T* row = x + r * n_;
      std::iota(order_.begin(), order_.end(), 0);
      std::stable_sort(order_.begin(), order_.end(), [&](std::int32_t a, std::int32_t b) {
        return SortsBefore(row[a], a, row[b], b, descending_);
      });
      std::copy(order_.begin(), order_.end(), out + r * n_);
    }
  }

 private:
  std::int64_t n_;
  std::int64_t rows_;
  bool descending_;
  std::vector<std::int32_t> order_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ArgSortCpu<float>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ArgSortCpu<double>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ArgSortCpu<std::int32_t>>);
  RegisterKernel({"argsort", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ArgSortCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
