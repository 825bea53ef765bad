// scalar_grad on the CPU: dx = dy · d(x (op) s)/dx, one loop per kind chosen outside the loop.
#include <cmath>
#include <cstdint>

#include "kernels/kernel.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

template <typename T> class ScalarGradCpu final : public Kernel {
 public:
  explicit ScalarGradCpu(const KernelSetup& setup)
      : kind_(setup.Get<ScalarAttrs>().kind), value_(static_cast<T>(setup.Get<ScalarAttrs>().value)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    const T s = value_;
    switch (kind_) {
      case ScalarOpKind::kAdd:
      case ScalarOpKind::kSub:
        Map(dy, x, dx, count, [](T g, T) { return g; });
        break;
      case ScalarOpKind::kRSub:
        Map(dy, x, dx, count, [](T g, T) { return -g; });
        break;
      case ScalarOpKind::kMul:
        Map(dy, x, dx, count, [s](T g, T) { return g * s; });
        break;
      case ScalarOpKind::kDiv:
        Map(dy, x, dx, count, [s](T g, T) { return g / s; });
        break;
      // d(s/x) = -s/x²
      case ScalarOpKind::kRDiv:
        Map(dy, x, dx, count, [s](T g, T v) { return -g * s / (v * v); });
        break;
      case ScalarOpKind::kPow:
        // d(x^s) = s·x^(s-1); x^0 is constant, so 0 even at x = 0 (where 0·x^-1 would be NaN).
        if (s == T(0)) {
          Map(dy, x, dx, count, [](T, T) { return T(0); });
        } else if (s == T(2)) {
          Map(dy, x, dx, count, [](T g, T v) { return g * T(2) * v; });
        } else {
          const T exponent = s - T(1);
          Map(dy, x, dx, count, [s, exponent](T g, T v) { return g * s * std::pow(v, exponent); });
        }
        break;
    }
  }

 private:
  template <typename Fn> static void Map(const T* dy, const T* x, T* dx, std::int64_t count, Fn fn) {
    for (std::int64_t i = 0; i < count; ++i) dx[i] = fn(dy[i], x[i]);
  }

  ScalarOpKind kind_;
  T value_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"scalar_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ScalarGradCpu<float>>);
  RegisterKernel({"scalar_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ScalarGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
