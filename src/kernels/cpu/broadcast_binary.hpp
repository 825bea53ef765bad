#pragma once
// The CPU's broadcasting binary kernel, shared by add, sub, mul, div, mod, maximum, minimum
// (broadcast_binary.cpp) and compare: the layout is classified once per task: equal element counts
// run as a flat loop, a scalar or a trailing block (a bias row) broadcast over a full operand as tight
// loops, and anything else as a strided walk over merged axes (kernels/functors/binary.hpp's plan,
// which the CUDA kernels share).
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/functors/binary.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// True if `part`, without its leading 1s, equals the trailing dims of `out`: then it is one
/// contiguous block repeated over the rows of `out`.
inline bool IsTrailingBlock(const Shape& part, const Shape& out) {
  int first = 0;
  while (first < part.Rank() && part[first] == 1) ++first;
  const int block_rank = part.Rank() - first;
  for (int i = 0; i < block_rank; ++i) {
    if (part[first + i] != out[out.Rank() - block_rank + i]) return false;
  }
  return true;
}

/// out = Op::Apply(a, b) elementwise with numpy broadcasting: a and b of T, out of Out.
template <typename T, typename Op, typename Out = T> class BroadcastBinaryCpu final : public Kernel {
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
    Out* y = outputs[0].As<Out>();
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

  void Strided(int axis, const T* a, const T* b, Out* y) const {
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

}  // namespace weir::internal
