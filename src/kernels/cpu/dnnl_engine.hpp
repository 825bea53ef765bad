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
/// Whether oneDNN runs bf16 products here at all: natively, or emulated on AVX512 without AVX512_BF16.
/// Below AVX512 it has no bf16 primitives (creating one throws "could not create a primitive descriptor").
bool DnnlRunsBFloat16();

}  // namespace weir::internal
