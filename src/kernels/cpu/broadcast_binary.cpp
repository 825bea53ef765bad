// add, sub, mul, div, mod, maximum, minimum on the CPU with numpy broadcasting (the math and the strided
// walk's plan are kernels/functors/binary.hpp, which the CUDA kernels share). The layout is
// classified once per task: equal element counts run as a flat loop, a scalar or a trailing block
// (a bias row) broadcast over a full operand as tight loops, and anything else as a strided walk
// over merged axes.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/arithmetic.hpp"
#include "kernels/functors/binary.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

// Integer division fails the call on a zero divisor (kernels/cpu/arithmetic.hpp).
struct DivOp {
  template <typename T> static T Apply(T a, T b) { return ArithDiv(a, b, "div"); }
};

struct FloorModOp {
  template <typename T> static T Apply(T a, T b) { return ArithFloorMod(a, b, "mod"); }
};

/// True if `part`, without its leading 1s, equals the trailing dims of `out`: then it is one
/// contiguous block repeated over the rows of `out`.
bool IsTrailingBlock(const Shape& part, const Shape& out) {
  int first = 0;
  while (first < part.Rank() && part[first] == 1) ++first;
  const int block_rank = part.Rank() - first;
  for (int i = 0; i < block_rank; ++i) {
    if (part[first + i] != out[out.Rank() - block_rank + i]) return false;
  }
  return true;
}

template <typename T, typename Op> class BroadcastBinaryCpu final : public Kernel {
 public:
  explicit BroadcastBinaryCpu(const KernelSetup& setup) : count_(setup.outputs[0].shape.NumElements()) {
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    const Shape& out = setup.outputs[0].shape;
    const std::int64_t a_count = a.NumElements();
    const std::int64_t b_count = b.NumElements();
    // Broadcast dims are 1 or the output's, so an operand with the output's count has its dims.
    if (a_count == count_ && b_count == count_) {
      layout_ = Layout::kSame;
    } else if (a_count == count_ && b_count == 1) {
      layout_ = Layout::kScalarB;
    } else if (b_count == count_ && a_count == 1) {
      layout_ = Layout::kScalarA;
    } else if (a_count == count_ && IsTrailingBlock(b, out)) {
      layout_ = Layout::kRowB;
      block_ = b_count;
    } else if (b_count == count_ && IsTrailingBlock(a, out)) {
      layout_ = Layout::kRowA;
      block_ = a_count;
    } else {
      layout_ = Layout::kStrided;
      PlanStrided(a, b, out);
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* a = inputs[0].As<T>();
    const T* b = inputs[1].As<T>();
    T* y = outputs[0].As<T>();
    if (count_ == 0) return;
    switch (layout_) {
      case Layout::kSame:
        for (std::int64_t i = 0; i < count_; ++i) y[i] = Op::Apply(a[i], b[i]);
        break;
      case Layout::kScalarA: {
        const T s = a[0];
        for (std::int64_t i = 0; i < count_; ++i) y[i] = Op::Apply(s, b[i]);
        break;
      }
      case Layout::kScalarB: {
        const T s = b[0];
        for (std::int64_t i = 0; i < count_; ++i) y[i] = Op::Apply(a[i], s);
        break;
      }
      case Layout::kRowA:
        for (std::int64_t row = 0; row < count_; row += block_) {
          for (std::int64_t i = 0; i < block_; ++i) y[row + i] = Op::Apply(a[i], b[row + i]);
        }
        break;
      case Layout::kRowB:
        for (std::int64_t row = 0; row < count_; row += block_) {
          for (std::int64_t i = 0; i < block_; ++i) y[row + i] = Op::Apply(a[row + i], b[i]);
        }
        break;
      case Layout::kStrided: Strided(0, a, b, y); break;
    }
  }

 private:
  enum class Layout : std::uint8_t { kSame, kScalarA, kScalarB, kRowA, kRowB, kStrided };

  // The merged broadcast walk (kernels/functors/binary.hpp; the CUDA kernel's too).
  void PlanStrided(const Shape& a, const Shape& b, const Shape& out) {
    if (count_ == 0) return;
    if (!PlanBroadcast(a.Dims(), b.Dims(), out.Dims(), plan_)) {
      throw std::invalid_argument(fmt::format("[broadcast] {} and {} broadcast over more than {} axes that do not merge",
                                              a, b, BroadcastPlan::kMaxRank));
    }
    std::int64_t stride = 1;
    for (int i = plan_.rank; i-- > 0;) {
      out_strides_[i] = stride;
      stride *= plan_.dims[i];
    }
  }

  void Strided(int axis, const T* a, const T* b, T* y) const {
    const std::int64_t dim = plan_.dims[axis];
    const std::int64_t a_stride = plan_.a_strides[axis];
    const std::int64_t b_stride = plan_.b_strides[axis];
    if (axis + 1 == plan_.rank) {
      for (std::int64_t i = 0; i < dim; ++i) y[i] = Op::Apply(a[i * a_stride], b[i * b_stride]);
      return;
    }
    const std::int64_t out_stride = out_strides_[axis];
    for (std::int64_t i = 0; i < dim; ++i) Strided(axis + 1, a + i * a_stride, b + i * b_stride, y + i * out_stride);
  }

  std::int64_t count_;
  Layout layout_ = Layout::kStrided;
  std::int64_t block_ = 1;  // elements of the repeated operand in kRowA / kRowB
  BroadcastPlan plan_;
  std::int64_t out_strides_[BroadcastPlan::kMaxRank] = {};
};

template <typename Op> void RegisterBinary(const char* op_type) {
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF32}, &MakeKernel<BroadcastBinaryCpu<float, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF64}, &MakeKernel<BroadcastBinaryCpu<double, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI32}, &MakeKernel<BroadcastBinaryCpu<std::int32_t, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI64}, &MakeKernel<BroadcastBinaryCpu<std::int64_t, Op>>);
}

WEIR_REGISTER_KERNELS {
  RegisterBinary<AddOp>("add");
  RegisterBinary<SubOp>("sub");
  RegisterBinary<MulOp>("mul");
  RegisterBinary<DivOp>("div");
  RegisterBinary<FloorModOp>("mod");
  RegisterBinary<MaximumOp>("maximum");
  RegisterBinary<MinimumOp>("minimum");
}

}  // namespace
}  // namespace weir::internal
