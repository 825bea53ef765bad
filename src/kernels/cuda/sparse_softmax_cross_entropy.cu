// sparse_softmax_cross_entropy and its gradient on CUDA: the CPU kernels' row math
// (kernels/functors/softmax.hpp) by a team of threads a row (kernels/cuda/row_team.cuh). A label out
// of range fails the call with the CPU's error, reported from the device through DeviceReports
// (lowest row first). The kernel key is the labels' dtype; the logits' is picked at creation.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/row_team.cuh"
#include "kernels/functors/softmax.hpp"

namespace weir::internal {
namespace {

// The row's label, checked: an out-of-range label is reported (by the team's first lane) and the row skipped.
template <typename Team, typename Label>
__device__ bool LabelInRange(const Label* labels, std::int64_t r, std::int64_t classes, const cuda::ReportRing& reports,
                             std::int64_t& label) {
  label = labels[r];
  if (label >= 0 && label < classes) return true;
  if (Team::Lane() == 0) cuda::CheckIndex(r, label, classes, reports);
  return false;
}

template <typename Team, typename Label, typename T>
__global__ void CrossEntropyKernel(const Label* labels, const T* logits, T* loss, std::int64_t rows, std::int64_t classes,
                                   cuda::ReportRing reports) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    std::int64_t label = 0;
    if (!LabelInRange<Team>(labels, r, classes, reports, label)) continue;
    const T value = SparseCrossEntropyRow<Team>(logits + r * classes, classes, label);
    if (Team::Lane() == 0) loss[r] = value;
  }
}

template <typename Team, typename Label, typename T>
__global__ void CrossEntropyGradKernel(const Label* labels, const T* logits, const T* dy, T* dlogits, std::int64_t rows,
                                       std::int64_t classes, cuda::ReportRing reports) {
  for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {
    std::int64_t label = 0;
    if (!LabelInRange<Team>(labels, r, classes, reports, label)) continue;
    SparseCrossEntropyGradRow<Team>(logits + r * classes, classes, label, dy[r], dlogits + r * classes);
  }
}

// kGrad: (labels, logits, dy) -> dlogits; else (labels, logits) -> loss.
template <typename Label, typename T, bool kGrad> class SparseCrossEntropyCuda final : public Kernel {
 public:
  static constexpr const char* kOp = kGrad ? "sparse_softmax_cross_entropy_grad" : "sparse_softmax_cross_entropy";

  explicit SparseCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), rows_(setup.inputs[1].shape[0]), classes_(setup.inputs[1].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[0].As<Label>();
    const T* logits = inputs[1].As<T>();
    if constexpr (kGrad) {
      cuda::LaunchRows(stream_, rows_, classes_, &CrossEntropyGradKernel<cuda::WarpPerRow, Label, T>,
                       &CrossEntropyGradKernel<cuda::BlockPerRow, Label, T>, labels, logits, inputs[2].As<T>(),
                       outputs[0].As<T>(), rows_, classes_, reports_.Ring());
    } else {
      cuda::LaunchRows(stream_, rows_, classes_, &CrossEntropyKernel<cuda::WarpPerRow, Label, T>,
                       &CrossEntropyKernel<cuda::BlockPerRow, Label, T>, labels, logits, outputs[0].As<T>(), rows_,
                       classes_, reports_.Ring());
    }
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[{}] label {} at row {} is outside [0, {})", kOp, bad->index, bad->position, classes_));
    }
  }

 private:
  void* stream_;
  std::int64_t rows_;
  std::int64_t classes_;
  DeviceReports reports_;
};

template <typename Label, bool kGrad> std::unique_ptr<Kernel> Make(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kF64) return std::make_unique<SparseCrossEntropyCuda<Label, double, kGrad>>(setup);
  return std::make_unique<SparseCrossEntropyCuda<Label, float, kGrad>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCuda, DType::kI32}, &Make<std::int32_t, false>);
  RegisterKernel({"sparse_softmax_cross_entropy", Device::Kind::kCuda, DType::kI64}, &Make<std::int64_t, false>);
  RegisterKernel({"sparse_softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kI32}, &Make<std::int32_t, true>);
  RegisterKernel({"sparse_softmax_cross_entropy_grad", Device::Kind::kCuda, DType::kI64}, &Make<std::int64_t, true>);
}

}  // namespace
}  // namespace weir::internal
