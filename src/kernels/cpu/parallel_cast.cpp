// parallel_cast on the CPU: a byte copy, for every dtype. The planner aliases most parallel_casts;
// one of a variable is copied, so that a result naming it never aliases the variable.
#include "kernels/cpu/byte_copy.hpp"

namespace weir::internal {

WEIR_REGISTER_KERNELS { RegisterByteCopy("parallel_cast"); }

}  // namespace weir::internal
