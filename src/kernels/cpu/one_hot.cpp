// one_hot on the CPU: each row of `depth` filled with off_value, then on_value at the index. The
// kernel key is the indices' dtype; the output dtype is picked when the task is created.
#include <algorithm>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename Index, typename T> class OneHotCpu final : public Kernel {
 public:
  explicit OneHotCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()),
        depth_(setup.Get<OneHotAttrs>().depth),
        on_(static_cast<T>(setup.Get<OneHotAttrs>().on_value)),
        off_(static_cast<T>(setup.Get<OneHotAttrs>().off_value)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Index* indices = inputs[0].As<Index>();
    T* out = outputs[0].As<T>();
    for (std::int64_t i = 0; i < count_; ++i) {
      const std::int64_t index = indices[i];
      if (index < 0 || index >= depth_) {
        throw KernelError(fmt::format("[one_hot] index {} at position {} is outside [0, {})", index, i, depth_));
      }
      T* row = out + i * depth_;
      std::fill(row, row + depth_, off_);
      row[index] = on_;
    }
  }

 private:
  std::int64_t count_;
  std::int64_t depth_;
  T on_;
  T off_;
};

template <typename Index> std::unique_ptr<Kernel> MakeOneHot(const KernelSetup& setup) {
  switch (setup.outputs[0].dtype) {
    case DType::kF64: return std::make_unique<OneHotCpu<Index, double>>(setup);
    case DType::kI32: return std::make_unique<OneHotCpu<Index, std::int32_t>>(setup);
    case DType::kI64: return std::make_unique<OneHotCpu<Index, std::int64_t>>(setup);
    default: return std::make_unique<OneHotCpu<Index, float>>(setup);
  }
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"one_hot", Device::Kind::kCpu, DType::kI32}, &MakeOneHot<std::int32_t>);
  RegisterKernel({"one_hot", Device::Kind::kCpu, DType::kI64}, &MakeOneHot<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
