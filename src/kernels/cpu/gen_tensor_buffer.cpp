// gen_tensor_buffer on the host: the items are made once, when the kernel is; each Run points the
// output's items at them (nothing writes them, so every slot may share them).
#include <cstring>
#include <vector>

#include "kernels/attrs/tensor_buffer_attrs.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/half.hpp"

namespace weir::internal {
namespace {

template <typename T> std::vector<std::uint8_t> Filled(std::int64_t count, double value) {
  T element;
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) element = T(static_cast<float>(value));
  else element = static_cast<T>(value);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count) * sizeof(T));
  for (std::int64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * sizeof(T), &element, sizeof(T));
  return bytes;
}

std::vector<std::uint8_t> FilledItem(DType dtype, std::int64_t count, double value) {
  switch (dtype) {
    case DType::kF32: return Filled<float>(count, value);
    case DType::kF64: return Filled<double>(count, value);
    case DType::kI32: return Filled<std::int32_t>(count, value);
    case DType::kI64: return Filled<std::int64_t>(count, value);
    case DType::kU8: return Filled<std::uint8_t>(count, value);
    case DType::kI8: return Filled<std::int8_t>(count, value);
    case DType::kBool: return Filled<bool>(count, value);
    case DType::kF16: return Filled<float16>(count, value);
    case DType::kBF16: return Filled<bfloat16>(count, value);
    case DType::kTensorBuffer: break;
  }
  throw std::invalid_argument("[gen_tensor_buffer] a tensor_buffer item cannot hold tensor_buffers");
}

class GenTensorBufferCpu final : public Kernel {
 public:
  explicit GenTensorBufferCpu(const KernelSetup& setup) {
    const auto& attrs = setup.Get<GenTensorBufferAttrs>();
    std::size_t first_dim = 0;
    for (std::size_t i = 0; i < attrs.item_ranks.size(); ++i) {
      std::vector<std::int32_t> dims;
      std::int64_t count = 1;
      for (std::int64_t d = 0; d < attrs.item_ranks[i]; ++d) {
        dims.push_back(static_cast<std::int32_t>(attrs.item_dims[first_dim]));
        count *= attrs.item_dims[first_dim++];
      }
      bytes_.push_back(FilledItem(attrs.dtype, count, attrs.values[i]));
      items_.emplace_back();
      SetItem(items_.back(), bytes_.back(), dims, attrs.dtype);
    }
  }

  void Run(std::span<const ConstTensorView>, std::span<const TensorView> outputs) override {
    if (!items_.empty()) std::memcpy(outputs[0].data, items_.data(), items_.size() * sizeof(TensorBufferItem));
  }

 private:
  std::vector<std::vector<std::uint8_t>> bytes_;
  std::vector<TensorBufferItem> items_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"gen_tensor_buffer", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<GenTensorBufferCpu>);
}

}  // namespace
}  // namespace weir::internal
