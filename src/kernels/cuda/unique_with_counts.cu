// unique_with_counts on CUDA: a thread per element in three passes, each O(n) a thread
// (kernels/functors/unique.hpp, the CPU kernel's values and order): zeros into the value and count
// outputs; whether each element is its value's first occurrence (the kernel's scratch); then each
// element's value's number (the distinct values below it), and from each first occurrence its value,
// its count and, from the largest, how many values. n^2 comparisons: quick up to some thousands of
// elements, as argsort; a sort would be the next step for larger inputs.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/unique.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index>
__global__ void ZeroUniqueKernel(T* y, Index* count, Index* values, std::int64_t n) {
  WEIR_FOR_EACH_ELEMENT(i, n) {
    y[i] = T{0};
    count[i] = Index{0};
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) values[0] = Index{0};
}

template <typename T> __global__ void FirstOccurrenceKernel(const T* x, bool* first, std::int64_t n) {
  WEIR_FOR_EACH_ELEMENT(i, n) { first[i] = FirstOccurrence(x, i); }
}

template <typename T, typename Index>
__global__ void NumberUniqueKernel(const T* x, const bool* first, std::int64_t n, T* y, Index* idx, Index* count,
                                   Index* values) {
  WEIR_FOR_EACH_ELEMENT(i, n) {
    const std::int64_t number = CountDistinct(x, first, n, x[i], true);
    idx[i] = static_cast<Index>(number);
    if (first[i]) {
      y[number] = x[i];
      count[number] = static_cast<Index>(Occurrences(x, n, x[i]));
      if (CountDistinct(x, first, n, x[i], false) == 0) values[0] = static_cast<Index>(number + 1);
    }
  }
}

template <typename T, typename Index> class UniqueWithCountsCuda final : public Kernel {
 public:
  explicit UniqueWithCountsCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), n_(setup.inputs[0].shape[0]),
        first_(setup.device.index, static_cast<std::size_t>(n_ > 0 ? n_ : 1)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    Index* idx = outputs[1].As<Index>();
    Index* count = outputs[2].As<Index>();
    Index* values = outputs[3].As<Index>();
    // Over at least one element, so that an empty x still gets its count of values, 0.
    cuda::LaunchOver(stream_, n_ > 0 ? n_ : 1, &ZeroUniqueKernel<T, Index>, y, count, values, n_);
    cuda::LaunchOver(stream_, n_, &FirstOccurrenceKernel<T>, x, first_.As<bool>(), n_);
    cuda::LaunchOver(stream_, n_, &NumberUniqueKernel<T, Index>, x, static_cast<const bool*>(first_.As<bool>()), n_, y, idx,
                     count, values);
  }

 private:
  void* stream_;
  std::int64_t n_;
  DeviceScratch first_;
};

// The kernel key is x's dtype; the indices' dtype (out_idx) is picked at creation.
template <typename T> std::unique_ptr<Kernel> MakeUniqueWithCountsCuda(const KernelSetup& setup) {
  if (setup.outputs[1].dtype == DType::kI64) return std::make_unique<UniqueWithCountsCuda<T, std::int64_t>>(setup);
  return std::make_unique<UniqueWithCountsCuda<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unique_with_counts", Device::Kind::kCuda, DType::kF32}, &MakeUniqueWithCountsCuda<float>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCuda, DType::kF64}, &MakeUniqueWithCountsCuda<double>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCuda, DType::kI32}, &MakeUniqueWithCountsCuda<std::int32_t>);
  RegisterKernel({"unique_with_counts", Device::Kind::kCuda, DType::kI64}, &MakeUniqueWithCountsCuda<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
