#pragma once
// Typed attributes of distributed_partial_fc_sample, shared by its definition (graph/ops) and kernels.
#include <cstdint>

namespace weir::internal {

/// The classes (num_classes, the logical weight's rows) fall into `parts` equal parts, and num_sample
/// samples into as many: each part's samples are drawn from its own classes, under `seed`.
struct PartialFcSampleAttrs {
  std::int64_t num_sample = 0;
  std::int64_t num_classes = 0;
  std::int64_t parts = 1;
  std::uint64_t seed = 0;
};

}  // namespace weir::internal
