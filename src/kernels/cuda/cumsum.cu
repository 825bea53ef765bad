// cumsum on CUDA: a thread per line along the axis (kernels/functors/cumsum.hpp, the CPU kernel's
// sums in the same order).
#include <cstdint>

#include "kernels/attrs/cumsum_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/cumsum.hpp"

namespace weir::internal {
namespace {

template <typename T>
__global__ void CumsumKernel(const T* x, T* y, std::int64_t lines, std::int64_t n, std::int64_t inner, bool exclusive,
                             bool reverse) {
  WEIR_FOR_EACH_ELEMENT(line, lines) {
    const std::int64_t first = (line / inner) * n * inner + line % inner;
    CumsumLine(x + first, y + first, n, inner, exclusive, reverse);
  }
}

template <typename T> class CumsumCuda final : public Kernel {
 public:
  explicit CumsumCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<CumsumAttrs>()), split_(setup.inputs[0].shape, attrs_.axis) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, split_.outer * split_.inner, &CumsumKernel<T>, inputs[0].As<T>(), outputs[0].As<T>(),
                     split_.outer * split_.inner, split_.n, split_.inner, attrs_.exclusive, attrs_.reverse);
  }

 private:
  void* stream_;
  CumsumAttrs attrs_;
  AxisSplit split_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"cumsum", Device::Kind::kCuda, DType::kF32}, &MakeKernel<CumsumCuda<float>>);
  RegisterKernel({"cumsum", Device::Kind::kCuda, DType::kF64}, &MakeKernel<CumsumCuda<double>>);
  RegisterKernel({"cumsum", Device::Kind::kCuda, DType::kI32}, &MakeKernel<CumsumCuda<std::int32_t>>);
  RegisterKernel({"cumsum", Device::Kind::kCuda, DType::kI64}, &MakeKernel<CumsumCuda<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
