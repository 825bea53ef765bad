// tensor_list_to_tensor_buffer on the host: each row of each tensor copied into this kernel's own item
// buffers (the tensors' slots may be written again before the items are read).
#include <vector>

#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class TensorListToTensorBufferCpu final : public Kernel {
 public:
  explicit TensorListToTensorBufferCpu(const KernelSetup& setup) : dtype_(setup.inputs[0].dtype) {
    for (const TensorMeta& tensor : setup.inputs) {
      const std::vector<std::int64_t>& dims = tensor.shape.Dims();
      item_dims_.emplace_back();
      for (auto dim = dims.begin() + 1; dim != dims.end(); ++dim) item_dims_.back().push_back(static_cast<std::int32_t>(*dim));
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    auto* items = outputs[0].As<TensorBufferItem>();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(outputs[0].NumElements()));
    std::size_t item = 0;
    for (std::size_t t = 0; t < inputs.size(); ++t) {
      const auto* bytes = static_cast<const std::uint8_t*>(inputs[t].data);
      const std::int64_t rows = inputs[t].meta->shape[0];
      const std::size_t row_bytes = rows > 0 ? inputs[t].meta->NumBytes() / static_cast<std::size_t>(rows) : 0;
      for (std::int64_t r = 0; r < rows; ++r, ++item) {
        buffers[item].assign(bytes + r * row_bytes, bytes + (r + 1) * row_bytes);
        SetItem(items[item], buffers[item], item_dims_[t], dtype_);
      }
    }
  }

 private:
  DType dtype_;
  std::vector<std::vector<std::int32_t>> item_dims_;  // per tensor: its items' dims
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"tensor_list_to_tensor_buffer", Device::Kind::kCpu, dtype}, &MakeKernel<TensorListToTensorBufferCpu>);
  }
}

}  // namespace
}  // namespace weir::internal
