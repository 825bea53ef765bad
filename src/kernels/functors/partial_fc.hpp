#pragma once
// distributed_partial_fc_sample's draw, for the CPU kernel and the CUDA kernel's device code alike.
// A part of the classes (first_class .. first_class + classes) gets `samples` of them: first the part's
// positive classes (those some label names) ascending, then negative classes picked by a partial
// Fisher-Yates shuffle of the others, each swap's draw Philox4x32's for (seed, call, part, k)
// (kernels/functors/philox.hpp), so that a part draws the same wherever it runs.
#include <cstdint>

#include "kernels/functors/host_device.hpp"
#include "kernels/functors/philox.hpp"

namespace weir::internal {

struct PartialFcPart {
  std::int64_t index = 0;        // the part's number among all parts
  std::int64_t first_class = 0;  // its first class
  std::int64_t classes = 0;      // classes a part
  std::int64_t samples = 0;      // samples a part
};

/// Draws `part`'s samples into sampled[0 .. part.samples) (global class ids). `position` and `pool`
/// are scratch of part.classes entries each; afterwards position[c] is class first_class + c's place
/// among the part's samples, or -1. Returns the part's positive classes: more than part.samples means
/// the draw failed (nothing after the positives was drawn).
template <typename Label>
WEIR_HOST_DEVICE std::int64_t SamplePartialFcPart(const Label* labels, std::int64_t batch, const PartialFcPart& part,
                                                  std::uint64_t seed, std::uint64_t call, std::int64_t* position,
                                                  std::int64_t* pool, Label* sampled) {
  for (std::int64_t c = 0; c < part.classes; ++c) position[c] = -1;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t c = static_cast<std::int64_t>(labels[b]) - part.first_class;
    if (c >= 0 && c < part.classes) position[c] = 0;
  }
  std::int64_t positives = 0, negatives = 0;
  for (std::int64_t c = 0; c < part.classes; ++c) {
    if (position[c] == 0) {
      if (positives < part.samples) sampled[positives] = static_cast<Label>(part.first_class + c);
      position[c] = positives++;
    } else {
      pool[negatives++] = c;
    }
  }
  if (positives > part.samples) return positives;
  for (std::int64_t k = 0; k < part.samples - positives; ++k) {
    const std::uint64_t draw = PhiloxDraw(seed, call, (static_cast<std::uint64_t>(part.index) << 32) | static_cast<std::uint64_t>(k));
    const std::int64_t j = k + static_cast<std::int64_t>(draw % static_cast<std::uint64_t>(negatives - k));
    const std::int64_t chosen = pool[j];
    pool[j] = pool[k];
    pool[k] = chosen;
    sampled[positives + k] = static_cast<Label>(part.first_class + chosen);
    position[chosen] = positives + k;
  }
  return positives;
}

/// Label `label`'s place in the whole sampled_label list, from the positions that SamplePartialFcPart
/// left for the `parts` consecutive parts from `first` on (part after part); 0 for a label of
/// another device's parts (that device places it: the places add up over the devices).
template <typename Label>
WEIR_HOST_DEVICE Label PlaceLabel(Label label, const PartialFcPart& first, std::int64_t parts, const std::int64_t* position) {
  const std::int64_t row = static_cast<std::int64_t>(label) - first.first_class;
  if (row < 0 || row >= parts * first.classes) return Label{0};
  return static_cast<Label>((first.index + row / first.classes) * first.samples + position[row]);
}

}  // namespace weir::internal
