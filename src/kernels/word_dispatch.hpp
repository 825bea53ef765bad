#pragma once
// Kernels that move elements whatever they mean (gather, where) handle them as unsigned words of the
// element's size: one instantiation serves every dtype of that size.
#include <cstddef>
#include <cstdint>

#include "weir/dtype.hpp"

namespace weir::internal {

/// make.template operator()<Word>() with the unsigned integer type of `dtype`'s size (1, 4 or 8 bytes).
template <typename Make> auto WithWordOf(DType dtype, Make&& make) {
  switch (SizeOf(dtype)) {
    case 1: return make.template operator()<std::uint8_t>();
    case 4: return make.template operator()<std::uint32_t>();
    default: return make.template operator()<std::uint64_t>();
  }
}

}  // namespace weir::internal
