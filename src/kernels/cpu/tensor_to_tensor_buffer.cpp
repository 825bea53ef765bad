// tensor_to_tensor_buffer on the host: each block of x's trailing axes copied into this kernel's own
// item buffers (x's slot may be written again before the items are read).
#include <cstring>
#include <vector>

#include "kernels/attrs/tensor_buffer_attrs.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class TensorToTensorBufferCpu final : public Kernel {
 public:
  explicit TensorToTensorBufferCpu(const KernelSetup& setup) : dtype_(setup.inputs[0].dtype) {
    const std::vector<std::int64_t>& dims = setup.inputs[0].shape.Dims();
    const int instance_dims = setup.Get<TensorToTensorBufferAttrs>().instance_dims;
    for (auto dim = dims.end() - instance_dims; dim != dims.end(); ++dim) item_dims_.push_back(static_cast<std::int32_t>(*dim));
    item_bytes_ = setup.inputs[0].NumBytes() / static_cast<std::size_t>(std::max<std::int64_t>(setup.outputs[0].shape.NumElements(), 1));
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* x = static_cast<const std::uint8_t*>(inputs[0].data);
    auto* items = outputs[0].As<TensorBufferItem>();
    const std::int64_t count = outputs[0].NumElements();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      std::vector<std::uint8_t>& buffer = buffers[static_cast<std::size_t>(i)];
      buffer.assign(x + i * item_bytes_, x + (i + 1) * item_bytes_);
      SetItem(items[i], buffer, item_dims_, dtype_);
    }
  }

 private:
  DType dtype_;
  std::vector<std::int32_t> item_dims_;
  std::size_t item_bytes_ = 0;
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"tensor_to_tensor_buffer", Device::Kind::kCpu, dtype}, &MakeKernel<TensorToTensorBufferCpu>);
  }
}

}  // namespace
}  // namespace weir::internal
