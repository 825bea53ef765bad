// cumsum on the CPU: each line along the axis summed in turn (kernels/functors/cumsum.hpp), the lines
// split over the intra-op pool when there are many.
#include <cstdint>
#include <memory>

#include "kernels/attrs/cumsum_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/cumsum.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class CumsumCpu final : public Kernel {
 public:
  explicit CumsumCpu(const KernelSetup& setup)
      : attrs_(setup.Get<CumsumAttrs>()), split_(setup.inputs[0].shape, attrs_.axis) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const std::int64_t line_elements = split_.n;
    // Per-range work is whole lines: a range of lines, each n elements.
    ForEachRange(split_.outer * split_.inner, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t line = begin; line < end; ++line) {
        const std::int64_t first = (line / split_.inner) * line_elements * split_.inner + line % split_.inner;
        CumsumLine(x + first, y + first, line_elements, split_.inner, attrs_.exclusive, attrs_.reverse);
      }
    });
  }

 private:
  CumsumAttrs attrs_;
  AxisSplit split_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"cumsum", Device::Kind::kCpu, DType::kF32}, &MakeKernel<CumsumCpu<float>>);
  RegisterKernel({"cumsum", Device::Kind::kCpu, DType::kF64}, &MakeKernel<CumsumCpu<double>>);
  RegisterKernel({"cumsum", Device::Kind::kCpu, DType::kI32}, &MakeKernel<CumsumCpu<std::int32_t>>);
  RegisterKernel({"cumsum", Device::Kind::kCpu, DType::kI64}, &MakeKernel<CumsumCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
