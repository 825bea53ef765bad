#include "weir/dtype.hpp"

namespace weir {

std::size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
    case DType::kI8: return 1;
    case DType::kBool: return 1;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kTensorBuffer: return 32;  // kernels/data/tensor_buffer.hpp: TensorBufferItem
  }
  return 0;
}

std::string_view Name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
    case DType::kI8: return "i8";
    case DType::kBool: return "bool";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kTensorBuffer: return "tensor_buffer";
  }
  return "?";
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 || dtype == DType::kBF16;
}

}  // namespace weir
