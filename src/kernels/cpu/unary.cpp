// unary and unary_grad on the CPU. Each kind is a functor (kernels/functors/unary.hpp, which the CUDA
// kernels share); the kernel picks the loop for its kind once, when the task is created, so Run is
// one plain loop over contiguous data with no per-element branch on the kind, which the compiler can
// vectorise, split over the intra-op pool when large (kernels/cpu/elementwise.hpp). The f32 gelu and its
// gradient, whose erfc and exp libm computes one element at a time, have loops of their own
// (kernels/cpu/vector/gelu_f32.hpp). bf16 runs the f32 loops on widened blocks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/vector/bfloat16_f32.hpp"
#include "kernels/cpu/vector/gelu_f32.hpp"
#include "kernels/functors/unary.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> using ForwardLoop = void (*)(const T* x, T* y, std::int64_t count);
template <typename T> using GradLoop = void (*)(const T* dy, const T* v, T* dx, std::int64_t count);

template <typename T, typename Fn> void Forward(const T* __restrict x, T* __restrict y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = Fn::template Fwd<T>(x[i]);
}

template <typename T, typename Fn>
void Backward(const T* __restrict dy, const T* __restrict v, T* __restrict dx, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = Fn::template Grad<T>(v[i], dy[i]);
}

template <typename T> ForwardLoop<T> ForwardLoopOf(UnaryOpKind kind) {
  return VisitUnaryKind(kind, []<typename Fn>() -> ForwardLoop<T> {
    // Shape inference admits integers only for the kinds that take them.
    if constexpr (std::is_integral_v<T> && !Fn::kTakesIntegers) {
      throw KernelError("[unary] this kind has no integer kernel");
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<Fn, UnaryFn<UnaryOpKind::kGelu>>) {
      return &GeluForwardF32;
    } else {
      return &Forward<T, Fn>;
    }
  });
}

template <typename T> GradLoop<T> GradLoopOf(UnaryOpKind kind) {
  return VisitUnaryKind(kind, []<typename Fn>() -> GradLoop<T> {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Fn, UnaryFn<UnaryOpKind::kGelu>>) return &GeluGradF32;
    else return &Backward<T, Fn>;
  });
}

template <typename T> class UnaryCpu final : public Kernel {
 public:
  explicit UnaryCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), loop_(ForwardLoopOf<T>(setup.Get<UnaryAttrs>().kind)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) { loop_(x + begin, y + begin, end - begin); });
  }

 private:
  std::int64_t count_;
  ForwardLoop<T> loop_;
};

template <typename T> class UnaryGradCpu final : public Kernel {
 public:
  explicit UnaryGradCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), loop_(GradLoopOf<T>(setup.Get<UnaryAttrs>().kind)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* v = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) { loop_(dy + begin, v + begin, dx + begin, end - begin); });
  }

 private:
  std::int64_t count_;
  GradLoop<T> loop_;
};

// bf16 (mixed precision's activations between bf16 products) runs the f32 loop of its kind over
// blocks widened on the stack and rounds each result once: the f32 loops' speed, gelu's vector code
// included, with half the memory traffic.
class UnaryBFloat16Cpu final : public Kernel {
 public:
  explicit UnaryBFloat16Cpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), loop_(ForwardLoopOf<float>(setup.Get<UnaryAttrs>().kind)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const bfloat16* x = inputs[0].As<bfloat16>();
    bfloat16* y = outputs[0].As<bfloat16>();
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
      OverWidenedBlocks<1>({x}, y, begin, end, [&](const auto& in, float* out, std::int64_t n) { loop_(in[0], out, n); });
    });
  }

 private:
  std::int64_t count_;
  ForwardLoop<float> loop_;
};

class UnaryGradBFloat16Cpu final : public Kernel {
 public:
  explicit UnaryGradBFloat16Cpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), loop_(GradLoopOf<float>(setup.Get<UnaryAttrs>().kind)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const bfloat16* dy = inputs[0].As<bfloat16>();
    const bfloat16* v = inputs[1].As<bfloat16>();
    bfloat16* dx = outputs[0].As<bfloat16>();
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
      OverWidenedBlocks<2>({dy, v}, dx, begin, end,
                           [&](const auto& in, float* out, std::int64_t n) { loop_(in[0], in[1], out, n); });
    });
  }

 private:
  std::int64_t count_;
  GradLoop<float> loop_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<UnaryBFloat16Cpu>);
  RegisterKernel({"unary_grad", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<UnaryGradBFloat16Cpu>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kF32}, &MakeKernel<UnaryCpu<float>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kF64}, &MakeKernel<UnaryCpu<double>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kI32}, &MakeKernel<UnaryCpu<std::int32_t>>);
  RegisterKernel({"unary", Device::Kind::kCpu, DType::kI64}, &MakeKernel<UnaryCpu<std::int64_t>>);
  RegisterKernel({"unary_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<UnaryGradCpu<float>>);
  RegisterKernel({"unary_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<UnaryGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
