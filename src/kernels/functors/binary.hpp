#pragma once
// The math and the broadcasting of add, sub, mul, div, mod, pow, maximum and minimum, for the CPU kernels and
// the CUDA kernels' device code alike.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/functors/arithmetic.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct AddOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return ArithAdd(a, b); }
};
struct SubOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return ArithSub(a, b); }
};
struct MulOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return ArithMul(a, b); }
};
/// Floating-point division (integer division, which must fail on a zero divisor, is the CPU's).
struct FloatDivOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return a / b; }
};
/// Floor modulo (Python's %, OneFlow's mod): a - floor(a / b) * b, the remainder taking the divisor's
/// sign. Floating point (integer modulo, which must fail on a zero divisor, is the CPU's).
struct FloatFloorModOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) {
    const T r = std::fmod(a, b);
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
  }
};
/// a to the power b (floating point).
struct PowOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return std::pow(a, b); }
};
// a on ties; a NaN operand wins (numpy's maximum / minimum propagate NaN).
struct MaximumOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return (a >= b || a != a) ? a : b; }
};
struct MinimumOp {
  template <typename T> static WEIR_HOST_DEVICE T Apply(T a, T b) { return (a <= b || a != a) ? a : b; }
};

/// maximum_grad / minimum_grad: dy goes to a where a was picked (a on ties), else to b.
struct MaximumPicksA {
  template <typename T> static WEIR_HOST_DEVICE bool Test(T a, T b) { return a >= b; }
};
struct MinimumPicksA {
  template <typename T> static WEIR_HOST_DEVICE bool Test(T a, T b) { return a <= b; }
};
template <typename PicksA, typename T> WEIR_HOST_DEVICE void ExtremumGrad(T dy, T a, T b, T& da, T& db) {
  const bool picks_a = PicksA::Test(a, b);
  da = picks_a ? dy : T(0);
  db = picks_a ? T(0) : dy;
}

/// A broadcast walk over merged axes: per axis (outermost first) its extent and each operand's
/// element stride (0 where the operand is broadcast). Size-1 output axes are dropped and neighbours
/// contiguous in both operands merged, so most layouts have one or two axes.
struct BroadcastPlan {
  static constexpr int kMaxRank = 12;
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t a_strides[kMaxRank] = {};
  std::int64_t b_strides[kMaxRank] = {};

  /// Where output element `index` (row-major over dims) reads a and b.
  WEIR_HOST_DEVICE void Offsets(std::int64_t index, std::int64_t& a, std::int64_t& b) const {
    a = 0;
    b = 0;
    for (int axis = rank - 1; axis >= 0; --axis) {
      const std::int64_t coordinate = index % dims[axis];
      index /= dims[axis];
      a += coordinate * a_strides[axis];
      b += coordinate * b_strides[axis];
    }
  }
};

/// The plan of out = a (op) b; shapes as dims, each operand's padded with leading 1s to the output's
/// rank and every dim 1 or the output's. Returns false when the merged walk has more than kMaxRank axes.
inline bool PlanBroadcast(const std::vector<std::int64_t>& a_dims_in, const std::vector<std::int64_t>& b_dims_in,
                          const std::vector<std::int64_t>& out, BroadcastPlan& plan) {
  const std::size_t rank = out.size();
  std::vector<std::int64_t> a_dims(rank - a_dims_in.size(), 1), b_dims(rank - b_dims_in.size(), 1);
  a_dims.insert(a_dims.end(), a_dims_in.begin(), a_dims_in.end());
  b_dims.insert(b_dims.end(), b_dims_in.begin(), b_dims_in.end());
  std::int64_t a_stride = 1, b_stride = 1;
  std::vector<std::int64_t> dims, a_strides, b_strides;  // innermost first
  for (std::size_t i = rank; i-- > 0;) {
    if (out[i] != 1) {
      dims.push_back(out[i]);
      a_strides.push_back(a_dims[i] == 1 ? 0 : a_stride);
      b_strides.push_back(b_dims[i] == 1 ? 0 : b_stride);
    }
    a_stride *= a_dims[i];
    b_stride *= b_dims[i];
  }
  plan = BroadcastPlan{};
  for (std::size_t i = dims.size(); i-- > 0;) {  // outermost first, merging
    const int last = plan.rank - 1;
    if (last >= 0 && plan.a_strides[last] == a_strides[i] * dims[i] && plan.b_strides[last] == b_strides[i] * dims[i]) {
      plan.dims[last] *= dims[i];
      plan.a_strides[last] = a_strides[i];
      plan.b_strides[last] = b_strides[i];
      continue;
    }
    if (plan.rank == BroadcastPlan::kMaxRank) return false;
    plan.dims[plan.rank] = dims[i];
    plan.a_strides[plan.rank] = a_strides[i];
    plan.b_strides[plan.rank] = b_strides[i];
    ++plan.rank;
  }
  return true;
}

/// The plan of a strided gather (a transpose, a broadcast): output element i (row-major over
/// out_dims) reads the input at the sum of its coordinates times in_strides (0 where broadcast),
/// as the plan's a-offset. Size-1 axes are dropped and neighbours contiguous in the input merged.
/// Returns false when the merged walk has more than kMaxRank axes.
inline bool PlanGather(const std::vector<std::int64_t>& out_dims, const std::vector<std::int64_t>& in_strides,
                       BroadcastPlan& plan) {
  plan = BroadcastPlan{};
  for (std::size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    const int last = plan.rank - 1;
    if (last >= 0 && plan.a_strides[last] == in_strides[i] * out_dims[i]) {
      plan.dims[last] *= out_dims[i];
      plan.a_strides[last] = in_strides[i];
      continue;
    }
    if (plan.rank == BroadcastPlan::kMaxRank) return false;
    plan.dims[plan.rank] = out_dims[i];
    plan.a_strides[plan.rank] = in_strides[i];
    ++plan.rank;
  }
  return true;
}

}  // namespace weir::internal
