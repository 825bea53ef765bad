// transpose on the CPU: a strided copy. Size-1 axes are dropped and output axes that stay
// adjacent in the input are merged, so e.g. (N,C,H,W)->(N,H,W,C) runs as a 3-D copy.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

static_assert(sizeof(bool) == 1, "bool tensors are copied as bytes");

// Moves bits only, so T is an unsigned integer of the element's size.
template <typename T> class TransposeCpu final : public Kernel {
 public:
  explicit TransposeCpu(const KernelSetup& setup) : count_(setup.inputs[0].shape.NumElements()) {
    const auto& perm = setup.Get<TransposeAttrs>().perm;
    const Shape& in = setup.inputs[0].shape;
    std::vector<std::int64_t> in_strides(perm.size(), 1);
    for (int i = in.Rank() - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in[i + 1];
    for (int axis : perm) {
      const std::int64_t dim = in[axis];
      const std::int64_t stride = in_strides[static_cast<std::size_t>(axis)];
      if (dim == 1) continue;
      if (!dims_.empty() && in_strides_.back() == stride * dim) {
        dims_.back() *= dim;
        in_strides_.back() = stride;
      } else {
        dims_.push_back(dim);
        in_strides_.push_back(stride);
      }
    }
    out_strides_.assign(dims_.size(), 1);
    for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) out_strides_[i] = out_strides_[i + 1] * dims_[i + 1];
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    if (count_ == 0) return;
    // No axis moved: the copy is contiguous.
    if (dims_.size() <= 1) {
      std::memcpy(y, x, static_cast<std::size_t>(count_) * sizeof(T));
      return;
    }
    Copy(0, x, y);
  }

 private:
  void Copy(std::size_t axis, const T* x, T* y) const {
    const std::int64_t dim = dims_[axis];
    const std::int64_t stride = in_strides_[axis];
    if (axis + 1 == dims_.size()) {
      for (std::int64_t i = 0; i < dim; ++i) y[i] = x[i * stride];
      return;
    }
    const std::int64_t out_stride = out_strides_[axis];
    for (std::int64_t i = 0; i < dim; ++i) Copy(axis + 1, x + i * stride, y + i * out_stride);
  }

  std::int64_t count_;
  std::vector<std::int64_t> dims_;         // merged output dims
  std::vector<std::int64_t> in_strides_;   // input element stride of each merged output axis
  std::vector<std::int64_t> out_strides_;  // contiguous strides of the merged output
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kU8, DType::kBool}) {
    RegisterKernel({"transpose", Device::Kind::kCpu, dtype}, &MakeKernel<TransposeCpu<std::uint8_t>>);
  }
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"transpose", Device::Kind::kCpu, dtype}, &MakeKernel<TransposeCpu<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"transpose", Device::Kind::kCpu, dtype}, &MakeKernel<TransposeCpu<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
