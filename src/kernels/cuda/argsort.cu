// argsort on CUDA: a thread per element counts the elements of its row that sort before it
// (kernels/functors/sort.hpp's SortedPosition, the CPU's order: ties by index, so every position is
// taken once) and writes its index there. n^2 comparisons a row: quick for rows of up to a few thousand
// elements, slow for vocabulary-sized ones (a segmented radix sort would be the next step there).
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/sort.hpp"

namespace weir::internal {
namespace {

template <typename T>
__global__ void ArgSortKernel(const T* x, std::int64_t n, std::int64_t count, bool descending, std::int32_t* out) {
  WEIR_FOR_EACH_ELEMENT(e, count) {
    const std::int64_t row = e / n;
    const std::int64_t i = e % n;
    out[row * n + SortedPosition(x + row * n, n, i, descending)] = static_cast<std::int32_t>(i);
  }
}

template <typename T> class ArgSortCuda final : public Kernel {
 public:
  explicit ArgSortCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), n_(setup.inputs[0].shape[setup.inputs[0].shape.Rank() - 1]),
        count_(setup.inputs[0].shape.NumElements()), descending_(setup.Get<ArgSortAttrs>().descending) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &ArgSortKernel<T>, inputs[0].As<T>(), n_, count_, descending_,
                     outputs[0].As<std::int32_t>());
  }

 private:
  void* stream_;
  std::int64_t n_;
  std::int64_t count_;
  bool descending_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argsort", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ArgSortCuda<float>>);
  RegisterKernel({"argsort", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ArgSortCuda<double>>);
  RegisterKernel({"argsort", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ArgSortCuda<std::int32_t>>);
  RegisterKernel({"argsort", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ArgSortCuda<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
