// tensor_buffer_to_tensor on the host: each item's bytes into its block of the output, after checking
// that the item is of the output's dtype and holds a block's elements.
#include <cstring>

#include <fmt/format.h>

#include "kernels/attrs/tensor_buffer_attrs.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class TensorBufferToTensorCpu final : public Kernel {
 public:
  explicit TensorBufferToTensorCpu(const KernelSetup& setup)
      : op_name_(setup.op_name), attrs_(setup.Get<TensorBufferToTensorAttrs>()),
        block_bytes_(static_cast<std::int64_t>(SizeOf(attrs_.dtype)) * attrs_.instance_shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* items = inputs[0].As<TensorBufferItem>();
    auto* out = static_cast<std::uint8_t*>(outputs[0].data);
    for (std::int64_t i = 0; i < inputs[0].NumElements(); ++i) {
      const TensorBufferItem& item = items[i];
      if (item.dtype != attrs_.dtype || item.bytes != block_bytes_) {
        throw KernelError(fmt::format("[tensor_buffer_to_tensor] '{}': item {} is {}{}, but dtype and instance_shape "
                                      "ask for {}{}", op_name_, i, item.dtype, ItemShape(item), attrs_.dtype,
                                      attrs_.instance_shape));
      }
      if (block_bytes_ > 0) std::memcpy(out + i * block_bytes_, item.data, static_cast<std::size_t>(block_bytes_));
    }
  }

 private:
  std::string op_name_;
  TensorBufferToTensorAttrs attrs_;
  std::int64_t block_bytes_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tensor_buffer_to_tensor", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<TensorBufferToTensorCpu>);
}

}  // namespace
}  // namespace weir::internal
