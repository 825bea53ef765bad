#pragma once
// categorical_ordinal_encode's hash table, for the CPU and CUDA kernels alike: `capacity` slots of
// (key, ordinal) pairs, ordinal 0 marking a free slot; a key's probes start at its mixed value
// (splitmix64's finaliser, so that consecutive ids or hashes with few varying bits spread over the
// table) and go on to the next slot, wrapping.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE std::int64_t FirstOrdinalSlot(T key, std::int64_t capacity) {
  auto mixed = static_cast<std::uint64_t>(static_cast<std::int64_t>(key));
  mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ULL;
  mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebULL;
  mixed ^= mixed >> 31;
  return static_cast<std::int64_t>(mixed % static_cast<std::uint64_t>(capacity));
}

WEIR_HOST_DEVICE inline std::int64_t NextOrdinalSlot(std::int64_t slot, std::int64_t capacity) {
  return slot + 1 == capacity ? 0 : slot + 1;
}

}  // namespace weir::internal
