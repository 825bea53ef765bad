// concat and concat_grad on the CPU. Around the axis a tensor is (outer, extent · inner) rows of
// contiguous bytes, so both are memcpy of one row chunk per input (or output) per outer row; they
// work on bytes and serve every dtype.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/attrs/concat_attrs.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

/// Bytes per outer row of each part, and the number of outer rows, for parts joined along `axis`.
struct ConcatLayout {
  std::int64_t outer = 1;
  std::vector<std::size_t> part_bytes;
  std::size_t row_bytes = 0;

  ConcatLayout(std::span<const TensorMeta> parts, int axis) {
    const Shape& shape = parts[0].shape;
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    for (const TensorMeta& part : parts) {
      std::int64_t elements = 1;
      for (int d = axis; d < part.shape.Rank(); ++d) elements *= part.shape[d];
      part_bytes.push_back(static_cast<std::size_t>(elements) * SizeOf(part.dtype));
      row_bytes += part_bytes.back();
    }
  }
};

class ConcatCpu final : public Kernel {
 public:
  explicit ConcatCpu(const KernelSetup& setup)
      : layout_(setup.inputs, ResolvedAxis(setup.Get<ConcatAttrs>().axis, setup.inputs[0].shape.Rank())) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    auto* out = static_cast<std::byte*>(outputs[0].data);
    for (std::int64_t row = 0; row < layout_.outer; ++row) {
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::size_t bytes = layout_.part_bytes[i];
        if (bytes == 0) continue;
        std::memcpy(out, static_cast<const std::byte*>(inputs[i].data) + static_cast<std::size_t>(row) * bytes, bytes);
        out += bytes;
      }
    }
  }

 private:
  static int ResolvedAxis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }
  ConcatLayout layout_;
};

class ConcatGradCpu final : public Kernel {
 public:
  explicit ConcatGradCpu(const KernelSetup& setup) : layout_(setup.outputs, setup.Get<ConcatGradAttrs>().axis) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* dy = static_cast<const std::byte*>(inputs[0].data);
    for (std::int64_t row = 0; row < layout_.outer; ++row) {
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::size_t bytes = layout_.part_bytes[i];
        if (bytes == 0) continue;
        std::memcpy(static_cast<std::byte*>(outputs[i].data) + static_cast<std::size_t>(row) * bytes, dy, bytes);
        dy += bytes;
      }
    }
  }

 private:
  ConcatLayout layout_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"concat", Device::Kind::kCpu, dtype}, &MakeKernel<ConcatCpu>);
    RegisterKernel({"concat_grad", Device::Kind::kCpu, dtype}, &MakeKernel<ConcatGradCpu>);
  }
}

}  // namespace
}  // namespace weir::internal
