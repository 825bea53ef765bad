#pragma once
/// \file Element types of tensors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "weir/half.hpp"

namespace weir {

/// Element type of a tensor. kTensorBuffer (OneFlow's tensor_buffer) is the data pipeline's: each
/// element describes a variable-sized item (a serialized record, a decoded image) held by the kernel
/// that made it; only the data ops (readers, decoders, image ops) read such tensors, on the host.
enum class DType : std::uint8_t { kF32, kF64, kI32, kI64, kU8, kBool, kI8, kF16, kBF16, kTensorBuffer };

/// Every element type, for registering a kernel that moves bytes whatever they mean.
inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64,  DType::kI32, DType::kI64, DType::kU8,
                                       DType::kI8,  DType::kBool, DType::kF16, DType::kBF16};
/// The one-byte types: kernels that only move elements handle them as std::uint8_t.
inline constexpr DType kByteDTypes[] = {DType::kU8, DType::kI8, DType::kBool};
/// The 16-bit floating types (weir/half.hpp): storage for mixed precision.
inline constexpr DType kHalfDTypes[] = {DType::kF16, DType::kBF16};

/// Bytes per element.
std::size_t SizeOf(DType dtype);
/// Short lower-case name: "f32", "f64", "i32", "i64", "u8", "i8", "bool", "f16", "bf16", "tensor_buffer".
std::string_view Name(DType dtype);
/// True for kF32, kF64, kF16 and kBF16.
bool IsFloating(DType dtype);

/// Maps a C++ element type to its DType.
template <typename T> constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kF32; }
template <> constexpr DType DTypeOf<double>() { return DType::kF64; }
template <> constexpr DType DTypeOf<std::int32_t>() { return DType::kI32; }
template <> constexpr DType DTypeOf<std::int64_t>() { return DType::kI64; }
template <> constexpr DType DTypeOf<std::uint8_t>() { return DType::kU8; }
template <> constexpr DType DTypeOf<std::int8_t>() { return DType::kI8; }
template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }
template <> constexpr DType DTypeOf<float16>() { return DType::kF16; }
template <> constexpr DType DTypeOf<bfloat16>() { return DType::kBF16; }

}  // namespace weir

template <> struct fmt::formatter<weir::DType> : fmt::formatter<std::string_view> {
  template <typename Context> auto format(weir::DType dtype, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(weir::Name(dtype), ctx);
  }
};
