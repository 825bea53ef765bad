#pragma once
// Files a killed process leaves behind (a shared-memory segment it had not yet unlinked, a checkpoint's
// temporary folder) carry its pid and this machine's tag in their names; a later process on the same
// machine removes those whose process no longer exists.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weir::internal {

/// What tells machines apart (for choosing the shared-memory group, and for the owners of stale files):
/// the kernel's boot id, this process's network namespace (so that two network namespaces of one
/// machine, as the tests' "two machines", count as two) and the host name.
std::string MachineIdentity();

/// Eight hex digits of MachineIdentity(), for file names.
std::string MachineTag();

/// True when no process `pid` exists on this machine (kill(pid, 0) fails with ESRCH).
bool ProcessIsGone(std::int64_t pid);

/// "<tag>-<pid>-<16 hex digits>": this machine's tag, this process's pid and a random number.
std::string OwnedSuffix();

/// The owner's pid when `suffix` is an OwnedSuffix() made on this machine by a process that is gone.
std::optional<std::int64_t> GoneOwner(std::string_view suffix);

}  // namespace weir::internal
