// layer_norm and layer_norm_grad on CUDA: a team of threads a row (kernels/cuda/row_team.cuh: a warp
// for rows of up to 1024 elements, a block beyond), running kernels/functors/layer_norm.hpp's row
// math, the CPU kernels' own.
#include <cstdint>

#include "kernels/attrs/layer_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/row_team.cuh"
#include "kernels/functors/layer_norm.hpp"

namespace weir::internal {
namespace {

template <typename Team, typename T>
__global__ void LayerNormRowsKernel(const T* x, T* y, T* mean, T* inv, std::int64_t rows, std::int64_t n, double epsilon) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    LayerNormRow<Team>(x + r * n, y + r * n, mean + r, inv + r, n, epsilon);
  }
}

template <typename Team, typename T>
__global__ void LayerNormGradRowsKernel(const T* dy, const T* x, const T* mean, const T* inv, T* dx, std::int64_t rows,
                                        std::int64_t n) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    LayerNormGradRow<Team>(dy + r * n, x + r * n, mean[r], inv[r], dx + r * n, n);
  }
}

template <typename T, bool kGrad> class LayerNormCuda final : public Kernel {
 public:
  // x as rows of n: the axes before begin_norm_axis, and those from it on.
  explicit LayerNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        attrs_(setup.Get<LayerNormAttrs>()),
        split_(setup.inputs[kGrad ? 1 : 0].shape, attrs_.begin_norm_axis),
        rows_(split_.outer),
        n_(split_.n * split_.inner) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (rows_ == 0) return;
    if constexpr (kGrad) {
      cuda::LaunchRows(stream_, rows_, n_, &LayerNormGradRowsKernel<cuda::WarpPerRow, T>,
                       &LayerNormGradRowsKernel<cuda::BlockPerRow, T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       inputs[2].As<T>(), inputs[3].As<T>(), outputs[0].As<T>(), rows_, n_);
    } else {
      cuda::LaunchRows(stream_, rows_, n_, &LayerNormRowsKernel<cuda::WarpPerRow, T>, &LayerNormRowsKernel<cuda::BlockPerRow, T>,
                       inputs[0].As<T>(), outputs[0].As<T>(), outputs[1].As<T>(), outputs[2].As<T>(), rows_, n_,
                       attrs_.epsilon);
    }
  }

 private:
  void* stream_;
  LayerNormAttrs attrs_;
  AxisSplit split_;
  std::int64_t rows_, n_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"layer_norm", Device::Kind::kCuda, DType::kF32}, &MakeKernel<LayerNormCuda<float, false>>);
  RegisterKernel({"layer_norm", Device::Kind::kCuda, DType::kF64}, &MakeKernel<LayerNormCuda<double, false>>);
  RegisterKernel({"layer_norm_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<LayerNormCuda<float, true>>);
  RegisterKernel({"layer_norm_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<LayerNormCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
