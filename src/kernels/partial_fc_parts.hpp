#pragma once
// distributed_partial_fc_sample's kernels (CPU and CUDA): which parts of the classes a device's piece
// of the weight holds, and what a failed draw or label says.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/split.hpp"
#include "kernels/attrs/partial_fc_attrs.hpp"
#include "kernels/functors/partial_fc.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// The parts a device holds: the weight's rows it has (all of them, or its piece of a split along the
/// rows) must be whole parts.
struct LocalParts {
  std::int64_t count = 0;
  PartialFcPart part;  // the first part; the others follow it

  PartialFcPart At(std::int64_t k) const {
    PartialFcPart p = part;
    p.index += k;
    p.first_class += k * part.classes;
    return p;
  }
};

inline LocalParts LocalPartsOf(const KernelSetup& setup) {
  const auto& attrs = setup.Get<PartialFcSampleAttrs>();
  const std::int64_t rows = setup.inputs[0].shape[0];
  const bool whole = rows == attrs.num_classes;
  const std::int64_t first_row = whole ? 0 : SplitBegin(attrs.num_classes, setup.shards, setup.shard);
  LocalParts local;
  local.part.classes = attrs.num_classes / attrs.parts;
  local.part.samples = attrs.num_sample / attrs.parts;
  if (first_row % local.part.classes != 0 || rows % local.part.classes != 0 ||
      setup.outputs[1].shape[0] != rows / local.part.classes * local.part.samples) {
    throw std::invalid_argument(fmt::format(
        "[distributed_partial_fc_sample] '{}': this device holds the weight's rows [{}, {}), which are not whole parts of "
        "{} classes: place the op on a number of devices that divides its {} parts", setup.op_name, first_row,
        first_row + rows, local.part.classes, attrs.parts));
  }
  local.count = rows / local.part.classes;
  local.part.index = first_row / local.part.classes;
  local.part.first_class = first_row;
  return local;
}

/// What a failed draw or label says, on either device.
inline std::string PartialFcError(std::string_view op_name, std::int64_t position, std::int64_t value,
                                  std::int64_t batch, std::int64_t num_classes, std::int64_t samples) {
  if (position < batch) {
    return fmt::format("[distributed_partial_fc_sample] '{}': label {} at position {} is outside [0, {})", op_name, value,
                       position, num_classes);
  }
  return fmt::format("[distributed_partial_fc_sample] '{}': part {} has {} positive classes among the labels, more than "
                     "its {} samples: raise num_sample", op_name, position - batch, value, samples);
}

}  // namespace weir::internal
