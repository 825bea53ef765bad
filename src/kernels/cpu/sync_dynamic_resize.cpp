// sync_dynamic_resize on the CPU: x's bytes unchanged (the rows past `size` are cut where the value
// leaves the job).
#include "kernels/cpu/byte_copy.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_KERNELS { RegisterByteCopy("sync_dynamic_resize"); }

}  // namespace
}  // namespace weir::internal
