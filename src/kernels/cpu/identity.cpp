// identity on the CPU: a byte copy, for every dtype.
#include "kernels/cpu/byte_copy.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS { RegisterByteCopy("identity"); }

}  // namespace
}  // namespace weir::internal
