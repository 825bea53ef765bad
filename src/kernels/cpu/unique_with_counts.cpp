// unique_with_counts on the CPU: x's positions sorted by value (ties by position, so each value's
// first occurrence leads its run), then one pass numbering the runs (kernels/functors/unique.hpp's
// values and order). Outputs: the distinct values ascending, zeros after them; each element's value's
// number; each value's count, zeros after; how many values.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "kernels/functors/sort.hpp"
#include "kernels/functors/unique.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index> class UniqueWithCountsCpu final : public Kernel {
 public:
  explicit UniqueWithCountsCpu(const KernelSetup& setup)
      : n_(setup.inputs[0].shape[0]), order_(static_cast<std::size_t>(n_)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    Index* idx = outputs[1].As<Index>();
    Index* count = outputs[2].As<Index>();
    std::fill(y, y + n_, T{0});
    std::fill(count, count + n_, Index{0});
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(), [x](std::int64_t a, std::int64_t b) { return SortsBefore(x[a], a, x[b], b, false); });
    Index values = 0;
    for (std::size_t k = 0; k < order_.size(); ++k) {
      const std::int64_t i = order_[k];
      if (k == 0 || !SameValue(x[order_[k - 1]], x[i])) y[values++] = x[i];
      idx[i] = values - 1;
      ++count[values - 1];
    }
    outputs[3].As<Index>()[0] = values;
  }

 private:
  std::int64_t n_;
  std::vector<std::int64_t> order_;  // sized once: Run allocates nothing
};

// The kernel key is x's dtype; the indices' dtype (out_idx) is picked at creation.
template <typename T> std::unique_ptr<Kernel> MakeUniqueWithCounts(const KernelSetup& setup) {
  if (setup.outputs[1].dtype == DType::kI64) return std::make_unique<UniqueWithCountsCpu<T, std::int64_t>>(setup);
  return std::make_unique<UniqueWithCountsCpu<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unique_with_counts", Device::Kind::kCpu, DType::kF32}, &MakeUniqueWithCounts<float>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCpu, DType::kF64}, &MakeUniqueWithCounts<double>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCpu, DType::kI32}, &MakeUniqueWithCounts<std::int32_t>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCpu, DType::kI64}, &MakeUniqueWithCounts<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
