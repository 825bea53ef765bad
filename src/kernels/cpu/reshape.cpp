// reshape on the CPU: row-major order is unchanged, so a byte copy, for every dtype.
#include "kernels/cpu/byte_copy.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS { RegisterByteCopy("reshape"); }

}  // namespace
}  // namespace weir::internal
