// softmax and softmax_grad on CUDA along any axis, x viewed as (outer, n, inner), running
// kernels/functors/softmax.hpp (the CPU kernels' math): along the last axis (inner 1) a team of
// threads a row (kernels/cuda/row_team.cuh), along another a thread a column (neighbouring threads
// then read neighbouring columns).
#include <cstdint>
#include <tuple>

#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/row_team.cuh"
#include "kernels/functors/softmax.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T>
__global__ void SoftmaxKernel(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  WEIR_FOR_EACH_ELEMENT(c, outer * inner) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    SoftmaxAlong(x + base, y + base, n, inner);
  }
}

template <typename T>
__global__ void SoftmaxGradKernel(const T* dy, const T* y, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  WEIR_FOR_EACH_ELEMENT(c, outer * inner) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    SoftmaxGradAlong(dy + base, y + base, dx + base, n, inner);
  }
}

// kGrad: softmax_grad, inputs (dy, y).
template <typename Team, typename T> __global__ void SoftmaxRowsKernel(const T* x, T* y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) SoftmaxAlong<Team>(x + r * n, y + r * n, n, 1);
}

template <typename Team, typename T>
__global__ void SoftmaxGradRowsKernel(const T* dy, const T* y, T* dx, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    SoftmaxGradAlong<Team>(dy + r * n, y + r * n, dx + r * n, n, 1);
  }
}

template <typename T, bool kGrad> class SoftmaxCuda final : public Kernel {
 public:
  explicit SoftmaxCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), split_(setup.inputs[0].shape, setup.Get<SoftmaxAttrs>().axis) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto [outer, n, inner] = std::tuple(split_.outer, split_.n, split_.inner);
    if (n == 0) return;
    if (inner == 1) {
      if constexpr (kGrad) {
        cuda::LaunchRows(stream_, outer, n, &SoftmaxGradRowsKernel<cuda::WarpPerRow, T>,
                         &SoftmaxGradRowsKernel<cuda::BlockPerRow, T>, inputs[0].As<T>(), inputs[1].As<T>(),
                         outputs[0].As<T>(), outer, n);
      } else {
        cuda::LaunchRows(stream_, outer, n, &SoftmaxRowsKernel<cuda::WarpPerRow, T>, &SoftmaxRowsKernel<cuda::BlockPerRow, T>,
                         inputs[0].As<T>(), outputs[0].As<T>(), outer, n);
      }
      return;
    }
    if constexpr (kGrad) {
      cuda::LaunchOver(stream_, outer * inner, &SoftmaxGradKernel<T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       outputs[0].As<T>(), outer, n, inner);
    } else {
      cuda::LaunchOver(stream_, outer * inner, &SoftmaxKernel<T>, inputs[0].As<T>(), outputs[0].As<T>(), outer, n, inner);
    }
  }

 private:
  void* stream_;
  AxisSplit split_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"softmax", Device::Kind::kCuda, DType::kF32}, &MakeKernel<SoftmaxCuda<float, false>>);
  RegisterKernel({"softmax", Device::Kind::kCuda, DType::kF64}, &MakeKernel<SoftmaxCuda<double, false>>);
  RegisterKernel({"softmax_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<SoftmaxCuda<float, true>>);
  RegisterKernel({"softmax_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<SoftmaxCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
