// scalar on the CPU: one loop per kind, chosen outside the loop so each one vectorises.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/arithmetic.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class ScalarCpu final : public Kernel {
 public:
  // Inference checked that integer x gets an integral, in-range value (and exponent >= 0).
  explicit ScalarCpu(const KernelSetup& setup)
      : kind_(setup.Get<ScalarAttrs>().kind),
        value_(static_cast<T>(setup.Get<ScalarAttrs>().value)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    const T s = value_;
    switch (kind_) {
      case ScalarOpKind::kAdd: Map(x, y, count, [s](T v) { return ArithAdd(v, s); }); break;
      case ScalarOpKind::kSub: Map(x, y, count, [s](T v) { return ArithSub(v, s); }); break;
      case ScalarOpKind::kRSub: Map(x, y, count, [s](T v) { return ArithSub(s, v); }); break;
      case ScalarOpKind::kMul: Map(x, y, count, [s](T v) { return ArithMul(v, s); }); break;
      case ScalarOpKind::kDiv: Map(x, y, count, [s](T v) { return ArithDiv(v, s, "scalar"); }); break;
      case ScalarOpKind::kRDiv: Map(x, y, count, [s](T v) { return ArithDiv(s, v, "scalar"); }); break;
      case ScalarOpKind::kPow:
        if constexpr (std::is_integral_v<T>) {
          const auto exponent = static_cast<std::uint64_t>(s);
          Map(x, y, count, [exponent](T v) { return IntPow(v, exponent); });
        } else {
          Map(x, y, count, [s](T v) { return std::pow(v, s); });
        }
        break;
    }
  }

 private:
  template <typename Fn> static void Map(const T* x, T* y, std::int64_t count, Fn fn) {
    for (std::int64_t i = 0; i < count; ++i) y[i] = fn(x[i]);
  }

  ScalarOpKind kind_;
  T value_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"scalar", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ScalarCpu<float>>);
  RegisterKernel({"scalar", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ScalarCpu<double>>);
  RegisterKernel({"scalar", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ScalarCpu<std::int32_t>>);
  RegisterKernel({"scalar", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ScalarCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
