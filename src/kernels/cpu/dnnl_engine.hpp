#pragma once
// The process-wide oneDNN CPU engine shared by every CPU kernel.
#include <dnnl.hpp>

#include "weir/dtype.hpp"

namespace weir::internal {

const dnnl::engine& CpuEngine();
/// The oneDNN data type of `dtype`; throws std::invalid_argument for types oneDNN lacks.
dnnl::memory::data_type DnnlDataType(DType dtype);
/// Whether oneDNN runs bf16 products natively here (AVX512_BF16 or AMX), so that they beat f32.
bool CpuHasNativeBFloat16();

}  // namespace weir::internal
