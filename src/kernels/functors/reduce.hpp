#pragma once
// The reductions' plan for the CUDA kernels (and its accumulator types, the CPU kernels'): x's axes
// after dropping size-1 axes and merging neighbours that are both reduced or both kept (as the CPU
// walk merges them), split into the kept axes (one output each combination) and the reduced ones.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// Floats accumulate in double; integers in uint64_t, which wraps instead of overflowing and converts
/// back modulo 2^bits.
template <typename T> using ReduceAcc = std::conditional_t<std::is_floating_point_v<T>, double, std::uint64_t>;

// Combine(acc, x): the new extremum; `x != x` lets a NaN win and then stick.
struct MaxOp {
  template <typename T> static WEIR_HOST_DEVICE T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  template <typename T> static WEIR_HOST_DEVICE T Combine(T acc, T x) { return (x > acc || x != x) ? x : acc; }
};
struct MinOp {
  template <typename T> static WEIR_HOST_DEVICE T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  template <typename T> static WEIR_HOST_DEVICE T Combine(T acc, T x) { return (x < acc || x != x) ? x : acc; }
};

// reduce_prod: integers multiply as unsigned, which wraps (as the sums do) instead of overflowing.
struct ProdOp {
  template <typename T> static WEIR_HOST_DEVICE T Identity() { return T(1); }
  template <typename T> static WEIR_HOST_DEVICE T Combine(T acc, T x) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(acc) * static_cast<U>(x)));
    } else {
      return acc * x;
    }
  }
};

struct ReductionPlan {
  static constexpr int kMaxRank = 12;
  int kept_rank = 0;
  int reduced_rank = 0;
  std::int64_t kept_dims[kMaxRank] = {};
  std::int64_t kept_strides[kMaxRank] = {};  // x's element strides of the kept axes
  std::int64_t reduced_dims[kMaxRank] = {};
  std::int64_t reduced_strides[kMaxRank] = {};
  std::int64_t reduced_count = 1;  // elements summed into each output

  /// Where in x the `reduced_index`-th element of output `out_index` sits (both row-major).
  WEIR_HOST_DEVICE std::int64_t Offset(std::int64_t out_index, std::int64_t reduced_index) const {
    std::int64_t offset = 0;
    for (int axis = kept_rank - 1; axis >= 0; --axis) {
      offset += (out_index % kept_dims[axis]) * kept_strides[axis];
      out_index /= kept_dims[axis];
    }
    for (int axis = reduced_rank - 1; axis >= 0; --axis) {
      offset += (reduced_index % reduced_dims[axis]) * reduced_strides[axis];
      reduced_index /= reduced_dims[axis];
    }
    return offset;
  }
};

/// How a GPU splits each output's sum: `parts` blocks each sum a contiguous `chunk` of its reduced
/// elements into a partial, and a second launch adds each output's partials in order (deterministic:
/// the split depends on the shapes only). A few long sums (a convolution's bias gradient: 32 outputs
/// of 78,400 elements) then fill the GPU instead of running on 32 of its multiprocessors; parts 1 is
/// a block per output. Partials are wanted for about kBlocksWanted blocks, each of kMinPerPart
/// elements at least.
struct ReduceSplit {
  static constexpr std::int64_t kBlocksWanted = 1024;
  static constexpr std::int64_t kMinPerPart = 4096;
  std::int64_t parts = 1;
  std::int64_t chunk = 0;  // reduced elements per part (the last may have fewer, or none)

  static ReduceSplit For(std::int64_t outputs, std::int64_t reduced_count) {
    ReduceSplit split;
    split.chunk = reduced_count;
    if (outputs <= 0 || outputs >= kBlocksWanted) return split;
    const std::int64_t by_blocks = (kBlocksWanted + outputs - 1) / outputs;
    const std::int64_t by_length = reduced_count / kMinPerPart;
    split.parts = by_blocks < by_length ? by_blocks : by_length;
    if (split.parts < 1) split.parts = 1;
    split.chunk = (reduced_count + split.parts - 1) / split.parts;
    return split;
  }
};

/// The plan for x of `dims` with `reduced[i]` saying whether axis i is summed. Returns false when the
/// merged axes exceed ReductionPlan::kMaxRank.
inline bool PlanReduction(const std::vector<std::int64_t>& dims, const std::vector<bool>& reduced, ReductionPlan& plan) {
  std::vector<std::int64_t> merged;
  std::vector<bool> merged_reduced;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!merged.empty() && merged_reduced.back() == reduced[i]) {
      merged.back() *= dims[i];
    } else {
      merged.push_back(dims[i]);
      merged_reduced.push_back(reduced[i]);
    }
  }
  plan = ReductionPlan{};
  std::int64_t stride = 1;
  std::vector<std::int64_t> strides(merged.size());
  for (std::size_t i = merged.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= merged[i];
  }
  for (std::size_t i = 0; i < merged.size(); ++i) {
    int& rank = merged_reduced[i] ? plan.reduced_rank : plan.kept_rank;
    if (rank == ReductionPlan::kMaxRank) return false;
    (merged_reduced[i] ? plan.reduced_dims : plan.kept_dims)[rank] = merged[i];
    (merged_reduced[i] ? plan.reduced_strides : plan.kept_strides)[rank] = strides[i];
    if (merged_reduced[i]) plan.reduced_count *= merged[i];
    ++rank;
  }
  return true;
}

}  // namespace weir::internal
