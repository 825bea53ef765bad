#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
// a counter-based generator. Each draw is a pure function of (key, counter), so every element of a
// tensor draws independently, on the CPU and on the GPU alike, with the same result.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct Philox4x32 {
  std::uint32_t v[4];
};

WEIR_HOST_DEVICE inline void MulHiLo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

/// Ten rounds of Philox4x32 on `counter` under `key`.
WEIR_HOST_DEVICE inline Philox4x32 Philox(Philox4x32 counter, std::uint32_t key0, std::uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(0xD2511F53u, counter.v[0], hi0, lo0);
    MulHiLo(0xCD9E8D57u, counter.v[2], hi1, lo1);
    counter = Philox4x32{{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  return counter;
}

/// A 64-bit draw for element `index` of draw set `stream` (a call) under `seed`.
WEIR_HOST_DEVICE inline std::uint64_t PhiloxDraw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const Philox4x32 out = Philox(Philox4x32{{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
                                            static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}},
                                static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  return (static_cast<std::uint64_t>(out.v[1]) << 32) | out.v[0];
}

/// dropout's mask bit: keep the element when its draw is at or above `threshold` (rate · 2^64).
WEIR_HOST_DEVICE inline bool DropoutKeeps(std::uint64_t seed, std::uint64_t call, std::uint64_t index,
                                          std::uint64_t threshold) {
  return PhiloxDraw(seed, call, index) >= threshold;
}

}  // namespace weir::internal
