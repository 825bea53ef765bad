#pragma once
// The index arithmetic of where (out = condition ? x : y, numpy-broadcast), for the CPU kernel and the
// CUDA kernel's device code alike: two broadcast plans over the output's walk, one reading the
// condition and x, the other y (kernels/functors/binary.hpp).
#include <cstdint>
#include <vector>

#include "kernels/functors/binary.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct WherePlan {
  BroadcastPlan condition_x;  // a: the condition, b: x
  BroadcastPlan y;            // a (and b): y

  /// Where output element `index` reads the condition, x and y.
  WEIR_HOST_DEVICE void Offsets(std::int64_t index, std::int64_t& condition, std::int64_t& x, std::int64_t& y_offset) const {
    condition_x.Offsets(index, condition, x);
    std::int64_t unused = 0;
    y.Offsets(index, y_offset, unused);
  }
};

/// The plan of out = condition ? x : y for those shapes (dims); false when a walk has more than
/// BroadcastPlan::kMaxRank axes that do not merge.
inline bool PlanWhere(const std::vector<std::int64_t>& condition, const std::vector<std::int64_t>& x,
                      const std::vector<std::int64_t>& y, const std::vector<std::int64_t>& out, WherePlan& plan) {
  return PlanBroadcast(condition, x, out, plan.condition_x) && PlanBroadcast(y, y, out, plan.y);
}

}  // namespace weir::internal
