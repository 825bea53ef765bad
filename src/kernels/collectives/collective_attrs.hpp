#pragma once
// Attributes of the collective actors the planner inserts (they are plan tasks, not graph ops).
#include "kernels/collectives/communicator.hpp"

namespace weir::internal {

/// All-reduce of one piece per device into one result that every device reads (devices of one
/// process share memory, so the result is one buffer).
struct AllReduceAttrs {
  ReduceOp op = ReduceOp::kMean;
  int devices = 1;
};

}  // namespace weir::internal
