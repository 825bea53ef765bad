// broadcast_to on the CPU: a strided copy with stride 0 along broadcast axes. Size-1 output axes
// are dropped and neighbours that stay contiguous (or stay broadcast) in x merged, so a repeated
// row becomes one copy per row and a broadcast scalar one fill.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/gradient_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

// Moves bits only, so T is an unsigned integer of the element's size.
template <typename T> class BroadcastToCpu final : public Kernel {
 public:
  explicit BroadcastToCpu(const KernelSetup& setup) : count_(setup.outputs[0].shape.NumElements()) {
    const Shape& x = setup.inputs[0].shape;
    const Shape& out = setup.outputs[0].shape;
    const int offset = out.Rank() - x.Rank();
    // x's contiguous strides, aligned with the output's axes; 0 where x is broadcast.
    std::vector<std::int64_t> strides(static_cast<std::size_t>(out.Rank()), 0);
    std::int64_t stride = 1;
    for (int i = x.Rank() - 1; i >= 0; --i) {
      if (x[i] != 1) strides[static_cast<std::size_t>(offset + i)] = stride;
      stride *= x[i];
    }
    for (int i = 0; i < out.Rank(); ++i) {
      const std::int64_t dim = out[i];
      const std::int64_t in_stride = strides[static_cast<std::size_t>(i)];
      if (dim == 1) continue;
      if (!dims_.empty() && in_strides_.back() == in_stride * dim) {
        dims_.back() *= dim;
        in_strides_.back() = in_stride;
      } else {
        dims_.push_back(dim);
        in_strides_.push_back(in_stride);
      }
    }
    out_strides_.assign(dims_.size(), 1);
    for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) out_strides_[i] = out_strides_[i + 1] * dims_[i + 1];
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    if (count_ == 0) return;
    if (dims_.empty()) {  // one element
      y[0] = x[0];
      return;
    }
    Copy(0, x, y);
  }

 private:
  void Copy(std::size_t axis, const T* x, T* y) const {
    const std::int64_t dim = dims_[axis];
    const std::int64_t stride = in_strides_[axis];
    if (axis + 1 == dims_.size()) {
      if (stride == 0) {
        std::fill(y, y + dim, x[0]);
      } else {
        for (std::int64_t i = 0; i < dim; ++i) y[i] = x[i * stride];
      }
      return;
    }
    const std::int64_t out_stride = out_strides_[axis];
    for (std::int64_t i = 0; i < dim; ++i) Copy(axis + 1, x + i * stride, y + i * out_stride);
  }

  std::int64_t count_;
  std::vector<std::int64_t> dims_;         // merged output dims
  std::vector<std::int64_t> in_strides_;   // x's element stride along each merged axis (0: broadcast)
  std::vector<std::int64_t> out_strides_;  // contiguous strides of the merged output
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCpu, dtype}, &MakeKernel<BroadcastToCpu<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCpu, dtype}, &MakeKernel<BroadcastToCpu<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
