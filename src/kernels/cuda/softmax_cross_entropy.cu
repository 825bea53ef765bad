// softmax_cross_entropy (dense labels) and its gradient on CUDA: the CPU kernels' row math
// (kernels/functors/softmax.hpp) by a team of threads a row of the last axis (kernels/cuda/row_team.cuh).
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/row_team.cuh"
#include "kernels/functors/softmax.hpp"

namespace weir::internal {
namespace {

template <typename Team, typename T>
__global__ void DenseCrossEntropyKernel(const T* z, const T* x, T* loss, std::int64_t rows, std::int64_t classes) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    const T value = SoftmaxCrossEntropyRow<Team>(z + r * classes, x + r * classes, classes);
    if (Team::Lane() == 0) loss[r] = value;
  }
}

template <typename Team, typename T>
__global__ void DenseCrossEntropyGradKernel(const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t rows,
                                            std::int64_t classes) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    const std::int64_t at = r * classes;
    SoftmaxCrossEntropyGradRow<Team>(z + at, x + at, dy[r], dz + at, dx + at, classes);
  }
}

// kGrad: (labels, logits, dy) -> (dlabels, dlogits); else (labels, logits) -> loss.
template <typename T, bool kGrad> class SoftmaxCrossEntropyCuda final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        rows_(kGrad ? setup.inputs[2].shape.NumElements() : setup.outputs[0].shape.NumElements()),
        classes_(setup.inputs[1].shape[setup.inputs[1].shape.Rank() - 1]) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (classes_ == 0) return;
    if constexpr (kGrad) {
      cuda::LaunchRows(stream_, rows_, classes_, &DenseCrossEntropyGradKernel<cuda::WarpPerRow, T>,
                       &DenseCrossEntropyGradKernel<cuda::BlockPerRow, T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       inputs[2].As<T>(), outputs[0].As<T>(), outputs[1].As<T>(), rows_, classes_);
    } else {
      cuda::LaunchRows(stream_, rows_, classes_, &DenseCrossEntropyKernel<cuda::WarpPerRow, T>,
                       &DenseCrossEntropyKernel<cuda::BlockPerRow, T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       outputs[0].As<T>(), rows_, classes_);
    }
  }

 private:
  void* stream_;
  std::int64_t rows_;
  std::int64_t classes_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"softmax_cross_entropy", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<SoftmaxCrossEntropyCuda<float, false>>);
  RegisterKernel({"softmax_cross_entropy", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<SoftmaxCrossEntropyCuda<double, false>>);
  RegisterKernel({"softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<SoftmaxCrossEntropyCuda<float, true>>);
  RegisterKernel({"softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<SoftmaxCrossEntropyCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
