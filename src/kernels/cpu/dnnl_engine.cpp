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
    case DType::kF16: return dnnl::memory::data_type::f16;
    case DType::kBF16: return dnnl::memory::data_type::bf16;
    case DType::kI32: return dnnl::memory::data_type::s32;
    case DType::kU8: return dnnl::memory::data_type::u8;
    case DType::kI8: return dnnl::memory::data_type::s8;
    default: throw std::invalid_argument(fmt::format("[oneDNN] no data type for {}", dtype));
  }
}

bool CpuHasNativeBFloat16() {
  // oneDNN's ISA values are unions of feature bits (AMX includes AVX512_BF16); the effective ISA
  // honours a cap the user set with ONEDNN_MAX_CPU_ISA.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

bool DnnlRunsBFloat16() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512) == avx512;
}

}  // namespace weir::internal
