// concat and concat_grad on CUDA: around the axis each part is (outer, extent · inner) rows of bytes,
// so each part moves as one 2-D copy (cudaMemcpy2DAsync) between its rows and its columns of the whole.
#include <cstdint>
#include <vector>

#include "kernels/attrs/concat_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

// kGrad: concat_grad, the whole split back into its parts.
template <bool kGrad> class ConcatCuda final : public Kernel {
 public:
  explicit ConcatCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)) {
    const std::span<const TensorMeta> parts = kGrad ? setup.outputs : setup.inputs;
    int axis = kGrad ? setup.Get<ConcatGradAttrs>().axis : setup.Get<ConcatAttrs>().axis;
    if (axis < 0) axis += parts[0].shape.Rank();
    for (int d = 0; d < axis; ++d) outer_ *= parts[0].shape[d];
    for (const TensorMeta& part : parts) {
      std::int64_t elements = 1;
      for (int d = axis; d < part.shape.Rank(); ++d) elements *= part.shape[d];
      part_bytes_.push_back(static_cast<std::size_t>(elements) * SizeOf(part.dtype));
      row_bytes_ += part_bytes_.back();
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    std::size_t offset = 0;  // of each part's columns in the whole's rows
    for (std::size_t i = 0; i < part_bytes_.size(); ++i) {
      const std::size_t bytes = part_bytes_[i];
      const auto rows = static_cast<std::size_t>(outer_);
      if constexpr (kGrad) {
        cuda::CopyRows(stream_, outputs[i].data, bytes, static_cast<const std::byte*>(inputs[0].data) + offset, row_bytes_, bytes, rows);
      } else {
        cuda::CopyRows(stream_, static_cast<std::byte*>(outputs[0].data) + offset, row_bytes_, inputs[i].data, bytes, bytes, rows);
      }
      offset += bytes;
    }
  }

 private:
  void* stream_;
  std::int64_t outer_ = 1;
  std::vector<std::size_t> part_bytes_;  // per outer row
  std::size_t row_bytes_ = 0;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"concat", Device::Kind::kCuda, dtype}, &MakeKernel<ConcatCuda<false>>);
    RegisterKernel({"concat_grad", Device::Kind::kCuda, dtype}, &MakeKernel<ConcatCuda<true>>);
  }
}

}  // namespace
}  // namespace weir::internal
