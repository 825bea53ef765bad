#include "kernels/cpu/dnnl_engine.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace weir::internal {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::data_type DnnlDataType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return dnnl::memory::data_type::f32;
    case DType::kI32: return dnnl::memory::data_type::s32;
    case DType::kU8: return dnnl::memory::data_type::u8;
    case DType::kI8: return dnnl::memory::data_type::s8;
    default: throw std::invalid_argument(fmt::format("[oneDNN] no data type for {}", dtype));
  }
}

}  // namespace weir::internal
