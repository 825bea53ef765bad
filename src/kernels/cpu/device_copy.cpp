// device_copy on the CPU: a byte copy, for every dtype. The planner inserts device_copy actors where a
// register crosses memories (graph/planner/device_copies.hpp); between CPU memories that is a plain copy.
#include "kernels/cpu/byte_copy.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS { RegisterByteCopy("device_copy"); }

}  // namespace
}  // namespace weir::internal
