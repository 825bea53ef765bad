#pragma once
// The process-wide oneDNN CPU engine shared by every CPU kernel.
#include <dnnl.hpp>

#include "weir/dtype.hpp"

namespace weir::internal {

const dnnl::engine& CpuEngine();
/// The oneDNN data type of `dtype`; throws std::invalid_argument for types oneDNN lacks.
dnnl::memory::data_type DnnlDataType(DType dtype);

}  // namespace weir::internal
