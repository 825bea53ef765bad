#pragma once
// Kernels that move elements whatever they mean (gather, where) handle them as unsigned words of the
// element's size: one instantiation serves every dtype of that size. Kernels that convert them (cast)
// take the element's own C++ type from WithTypeOf.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "weir/dtype.hpp"

namespace weir::internal {

/// make.template operator()<Word>() with the unsigned integer type of `dtype`'s size (1, 2, 4 or 8 bytes).
template <typename Make> auto WithWordOf(DType dtype, Make&& make) {
  switch (SizeOf(dtype)) {
    case 1: return make.template operator()<std::uint8_t>();
    case 2: return make.template operator()<std::uint16_t>();
    case 4: return make.template operator()<std::uint32_t>();
    default: return make.template operator()<std::uint64_t>();
  }
}

/// make.template operator()<T>() with T the C++ element type of `dtype` (DTypeOf<T>() == dtype).
template <typename Make> auto WithTypeOf(DType dtype, Make&& make) {
  switch (dtype) {
    case DType::kF64: return make.template operator()<double>();
    case DType::kI32: return make.template operator()<std::int32_t>();
    case DType::kI64: return make.template operator()<std::int64_t>();
    case DType::kU8: return make.template operator()<std::uint8_t>();
    case DType::kI8: return make.template operator()<std::int8_t>();
    case DType::kBool: return make.template operator()<bool>();
    case DType::kF16: return make.template operator()<float16>();
    case DType::kBF16: return make.template operator()<bfloat16>();
    case DType::kF32: break;
    case DType::kTensorBuffer: throw std::invalid_argument("a tensor_buffer has no C++ element type");
  }
  return make.template operator()<float>();
}

}  // namespace weir::internal
