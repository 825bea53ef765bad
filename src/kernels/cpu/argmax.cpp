// argmax on the CPU: x viewed as (outer, n, inner) with the axis in the middle. Only a strictly
// larger value moves the index, so ties keep the first; a NaN counts as the largest, as in numpy.
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/byte_copy.hpp"
#include "kernels/functors/argmax.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index> class ArgMaxCpu final : public Kernel {
 public:
  explicit ArgMaxCpu(const KernelSetup& setup)
      : split_(setup.inputs[0].shape, setup.Get<ArgMaxAttrs>().axis), outer_(split_.outer), n_(split_.n),
        inner_(split_.inner) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    Index* y = outputs[0].As<Index>();
    for (std::int64_t o = 0; o < outer_; ++o) {
      for (std::int64_t i = 0; i < inner_; ++i) {
        y[o * inner_ + i] = static_cast<Index>(ArgMaxAlong(x + o * n_ * inner_ + i, n_, inner_));
      }
    }
  }

 private:
  AxisSplit split_;
  std::int64_t outer_;
  std::int64_t n_;
  std::int64_t inner_;
};

// The kernel key is the input dtype; the index dtype is chosen here from the attrs.
template <typename T> std::unique_ptr<Kernel> MakeArgMax(const KernelSetup& setup) {
  if (setup.Get<ArgMaxAttrs>().output_dtype == DType::kI64) return std::make_unique<ArgMaxCpu<T, std::int64_t>>(setup);
  return std::make_unique<ArgMaxCpu<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argmax", Device::Kind::kCpu, DType::kF32}, &MakeArgMax<float>);
  RegisterKernel({"argmax", Device::Kind::kCpu, DType::kF64}, &MakeArgMax<double>);
  RegisterKernel({"argmax", Device::Kind::kCpu, DType::kI32}, &MakeArgMax<std::int32_t>);
  RegisterKernel({"argmax", Device::Kind::kCpu, DType::kI64}, &MakeArgMax<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
