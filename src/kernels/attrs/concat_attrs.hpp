#pragma once
// Typed attributes of concat_grad, shared by its definition (graph/ops) and its kernels.
#include <cstdint>
#include <vector>

namespace weir::internal {

/// concat_grad (dy -> one slice of dy per concat input): the resolved concat axis and each input's
/// extent along it, which dy alone does not determine.
struct ConcatGradAttrs {
  int axis = 0;
  std::vector<std::int64_t> sizes;
};

}  // namespace weir::internal
