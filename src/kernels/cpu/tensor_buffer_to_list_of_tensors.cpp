// tensor_buffer_to_list_of_tensors on the host: each item into its own output, row by row into the
// output's leading corner (zeros elsewhere), after checking its dtype, rank and size; with dynamic_out,
// its shape into the matching shape output.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "kernels/attrs/tensor_buffer_attrs.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class TensorBufferToListOfTensorsCpu final : public Kernel {
 public:
  explicit TensorBufferToListOfTensorsCpu(const KernelSetup& setup)
      : op_name_(setup.op_name), attrs_(setup.Get<TensorBufferToListOfTensorsAttrs>()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* items = inputs[0].As<TensorBufferItem>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) {
      const TensorBufferItem& item = items[i];
      Check(item, i);
      Copy(item, static_cast<std::uint8_t*>(outputs[static_cast<std::size_t>(i)].data));
      if (attrs_.dynamic_out) {
        std::int64_t* shape = outputs[static_cast<std::size_t>(count + i)].As<std::int64_t>();
        for (int d = 0; d < item.ndim; ++d) shape[d] = item.dims[d];
      }
    }
  }

 private:
  void Check(const TensorBufferItem& item, std::int64_t index) const {
    const Shape& out = attrs_.out_shape;
    bool fits = item.dtype == attrs_.out_dtype && item.ndim == out.Rank();
    for (int d = 0; fits && d < item.ndim; ++d) fits = attrs_.dynamic_out ? item.dims[d] <= out[d] : item.dims[d] == out[d];
    if (!fits) {
      throw KernelError(fmt::format("[tensor_buffer_to_list_of_tensors] '{}': item {} is {}{}, but the outputs are {}{}{}",
                                    op_name_, index, item.dtype, ItemShape(item), attrs_.out_dtype, out,
                                    attrs_.dynamic_out ? " (an item may be smaller on any axis)" : ""));
    }
  }

  // Row-major: the item's innermost rows, each copied to its place in the larger output.
  void Copy(const TensorBufferItem& item, std::uint8_t* out) const {
    const Shape& shape = attrs_.out_shape;
    const std::size_t element = SizeOf(attrs_.out_dtype);
    if (shape.NumElements() == 0) return;
    std::memset(out, 0, static_cast<std::size_t>(shape.NumElements()) * element);
    const int rank = shape.Rank();
    const std::int64_t row_bytes = item.dims[rank - 1] * static_cast<std::int64_t>(element);
    const std::int64_t rows = ItemShape(item).NumElements() / std::max<std::int64_t>(item.dims[rank - 1], 1);
    for (std::int64_t r = 0; r < rows && row_bytes > 0; ++r) {
      // r's coordinates on the item's outer axes, placed with the output's strides.
      std::int64_t rest = r, offset = 0, stride = shape[rank - 1];
      for (int d = rank - 2; d >= 0; --d) {
        offset += (rest % item.dims[d]) * stride;
        rest /= item.dims[d];
        stride *= shape[d];
      }
      std::memcpy(out + offset * static_cast<std::int64_t>(element), item.data + r * row_bytes, static_cast<std::size_t>(row_bytes));
    }
  }

  std::string op_name_;
  TensorBufferToListOfTensorsAttrs attrs_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tensor_buffer_to_list_of_tensors", Device::Kind::kCpu, DType::kTensorBuffer},
                 &MakeKernel<TensorBufferToListOfTensorsCpu>);
}

}  // namespace
}  // namespace weir::internal
