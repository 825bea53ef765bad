// unary and unary_grad on the CPU. Each kind is a functor; the kernel picks the loop for its kind
// once, when the task is created, so Run is one plain loop over contiguous data with no
// per-element branch on the kind, which the compiler can vectorise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/arithmetic.hpp"
#include "kernels/kernel.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

// Fwd(x) = f(x); Grad(v, dy) = f' · dy where v is y for the kinds in UnaryGradUsesOutput, else x.
struct ExpFn {
  template <typename T> static T Fwd(T x) { return std::exp(x); }
  template <typename T> static T Grad(T y, T dy) { return dy * y; }
};
struct LogFn {
  template <typename T> static T Fwd(T x) { return std::log(x); }
  template <typename T> static T Grad(T x, T dy) { return dy / x; }
};
struct SqrtFn {
  template <typename T> static T Fwd(T x) { return std::sqrt(x); }
  template <typename T> static T Grad(T y, T dy) { return dy / (T(2) * y); }
};
struct RsqrtFn {
  template <typename T> static T Fwd(T x) { return T(1) / std::sqrt(x); }
  // d(x^-1/2) = -x^-3/2 / 2 = -y³ / 2.
  template <typename T> static T Grad(T y, T dy) { return T(-0.5) * dy * y * y * y; }
};
struct SquareFn {
  template <typename T> static T Fwd(T x) { return ArithMul(x, x); }
  template <typename T> static T Grad(T x, T dy) { return T(2) * x * dy; }
};
struct AbsFn {
  // Integers wrap: |lowest| is lowest, as two's complement negation gives.
  template <typename T> static T Fwd(T x) {
    if constexpr (std::is_integral_v<T>) {
      return x < 0 ? ArithSub(T(0), x) : x;
    } else {
      return std::abs(x);
    }
  }
  template <typename T> static T Grad(T x, T dy) { return x > T(0) ? dy : (x < T(0) ? -dy : T(0)); }
};
struct NegativeFn {
  // -x, not 0 - x: the negative of +0.0 is -0.0. Integers wrap.
  template <typename T> static T Fwd(T x) {
    if constexpr (std::is_integral_v<T>) {
      return ArithSub(T(0), x);
    } else {
      return -x;
    }
  }
  template <typename T> static T Grad(T, T dy) { return -dy; }
};
struct ReciprocalFn {
  template <typename T> static T Fwd(T x) { return T(1) / x; }
  template <typename T> static T Grad(T y, T dy) { return -dy * y * y; }
};
struct Log1pFn {
  template <typename T> static T Fwd(T x) { return std::log1p(x); }
  template <typename T> static T Grad(T x, T dy) { return dy / (T(1) + x); }
};
struct Expm1Fn {
  template <typename T> static T Fwd(T x) { return std::expm1(x); }
  template <typename T> static T Grad(T y, T dy) { return dy * (y + T(1)); }
};
struct SoftplusFn {
  // max(x, 0) + log1p(e^-|x|): no overflow for large |x|, no cancellation for very negative x.
  template <typename T> static T Fwd(T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); }
  template <typename T> static T Grad(T x, T dy) { return dy / (T(1) + std::exp(-x)); }
};
struct SignFn {
  template <typename T> static T Fwd(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }
  template <typename T> static T Grad(T, T) { return T(0); }
};
struct FloorFn {
  template <typename T> static T Fwd(T x) { return std::floor(x); }
  template <typename T> static T Grad(T, T) { return T(0); }
};
struct CeilFn {
  template <typename T> static T Fwd(T x) { return std::ceil(x); }
  template <typename T> static T Grad(T, T) { return T(0); }
};
struct RoundFn {
  // nearbyint rounds half to even in the default rounding mode (OneFlow's round is rint).
  template <typename T> static T Fwd(T x) { return std::nearbyint(x); }
  template <typename T> static T Grad(T, T) { return T(0); }
};
struct SinFn {
  template <typename T> static T Fwd(T x) { return std::sin(x); }
  template <typename T> static T Grad(T x, T dy) { return dy * std::cos(x); }
};
struct CosFn {
  template <typename T> static T Fwd(T x) { return std::cos(x); }
  template <typename T> static T Grad(T x, T dy) { return -dy * std::sin(x); }
};

template <typename T> using ForwardLoop = void (*)(const T* x, T* y, std::int64_t count);
template <typename T> using GradLoop = void (*)(const T* dy, const T* v, T* dx, std::int64_t count);

template <typename T, typename Fn> void Forward(const T* x, T* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = Fn::template Fwd<T>(x[i]);
}

template <typename T, typename Fn> void Backward(const T* dy, const T* v, T* dx, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = Fn::template Grad<T>(v[i], dy[i]);
}

/// Calls `visit.template operator()<Fn>()` with the functor of `kind`.
template <typename Visit> auto VisitKind(UnaryOpKind kind, Visit&& visit) {
  switch (kind) {
    case UnaryOpKind::kExp: return visit.template operator()<ExpFn>();
    case UnaryOpKind::kLog: return visit.template operator()<LogFn>();
    case UnaryOpKind::kSqrt: return visit.template operator()<SqrtFn>();
    case UnaryOpKind::kRsqrt: return visit.template operator()<RsqrtFn>();
    case UnaryOpKind::kSquare: return visit.template operator()<SquareFn>();
    case UnaryOpKind::kAbs: return visit.template operator()<AbsFn>();
    case UnaryOpKind::kNegative: return visit.template operator()<NegativeFn>();
    case UnaryOpKind::kReciprocal: return visit.template operator()<ReciprocalFn>();
    case UnaryOpKind::kLog1p: return visit.template operator()<Log1pFn>();
    case UnaryOpKind::kExpm1: return visit.template operator()<Expm1Fn>();
    case UnaryOpKind::kSoftplus: return visit.template operator()<SoftplusFn>();
    case UnaryOpKind::kSign: return visit.template operator()<SignFn>();
    case UnaryOpKind::kFloor: return visit.template operator()<FloorFn>();
    case UnaryOpKind::kCeil: return visit.template operator()<CeilFn>();
    case UnaryOpKind::kRound: return visit.template operator()<RoundFn>();
    case UnaryOpKind::kSin: return visit.template operator()<SinFn>();
    case UnaryOpKind::kCos: return visit.template operator()<CosFn>();
  }
  throw KernelError("[unary] unknown kind");
}

template <typename T> class UnaryCpu final : public Kernel {
 public:
  explicit UnaryCpu(const KernelSetup& setup) : count_(setup.inputs[0].shape.NumElements()) {
    const UnaryOpKind kind = setup.Get<UnaryAttrs>().kind;
    if constexpr (std::is_integral_v<T>) {
      // Shape inference admits only these kinds for integers.
      switch (kind) {
        case UnaryOpKind::kSquare: loop_ = &Forward<T, SquareFn>; break;
        case UnaryOpKind::kAbs: loop_ = &Forward<T, AbsFn>; break;
        case UnaryOpKind::kNegative: loop_ = &Forward<T, NegativeFn>; break;
        case UnaryOpKind::kSign: loop_ = &Forward<T, SignFn>; break;
        default: throw KernelError("[unary] this kind has no integer kernel");
      }
    } else {
      loop_ = VisitKind(kind, []<typename Fn>() -> ForwardLoop<T> { return &Forward<T, Fn>; });
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    loop_(inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  std::int64_t count_;
  ForwardLoop<T> loop_ = nullptr;
};

template <typename T> class UnaryGradCpu final : public Kernel {
 public:
  explicit UnaryGradCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()),
        loop_(VisitKind(setup.Get<UnaryAttrs>().kind, []<typename Fn>() -> GradLoop<T> { return &Backward<T, Fn>; })) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    loop_(inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  std::int64_t count_;
  GradLoop<T> loop_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kF32}, &MakeKernel<UnaryCpu<float>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kF64}, &MakeKernel<UnaryCpu<double>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kI32}, &MakeKernel<UnaryCpu<std::int32_t>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kI64}, &MakeKernel<UnaryCpu<std::int64_t>>);
  RegisterKernel({"unary_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<UnaryGradCpu<float>>);
  RegisterKernel({"unary_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<UnaryGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
