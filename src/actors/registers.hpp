#pragma once
// Register memory of one instantiated plan: every slot of every register, carved out of arenas
// allocated up front (one per memory: the host's, pinned host memory, each CUDA device's), so no call
// allocates register memory. Two kinds of register own no arena memory: a variable's (its slot is the
// variable's storage) and a call input's that stays on the host (its slot points at the call's input
// tensor, set by the input actor for each call).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/call.hpp"
#include "plan/plan.hpp"

namespace weir::internal {

/// One slot: its memory and the piece it currently holds. The producer writes the header before
/// sending "readable"; consumers read it after receiving that message.
struct RegisterSlot {
  std::byte* data = nullptr;
  CallRecord* call = nullptr;
  bool failed = false;  // an upstream kernel failed on this piece: skip work, pass the failure on
};

/// A session variable as a job binds it: its storage on the device whose kernels use it, and its
/// version, which grows whenever the variable may change (api/variable_store.hpp).
struct BoundVariable {
  Tensor storage;
  std::shared_ptr<const std::atomic<std::uint64_t>> version;
};
/// The session's variable `name`, bound for `device`.
using VariableResolver = std::function<BoundVariable(const std::string& name, Device device)>;

class RegisterStore {
 public:
  /// Registers of variables use the variables' own storage (from `variables`), kept alive here.
  RegisterStore(const Plan& plan, const VariableResolver& variables);
  RegisterSlot& Slot(int register_id, int slot) {
    return slots_[static_cast<std::size_t>(first_slot_[static_cast<std::size_t>(register_id)] + slot)];
  }
  /// The version of a variable the plan binds (BoundVariable::version); throws std::logic_error for
  /// another name.
  const std::atomic<std::uint64_t>& VersionOf(const std::string& variable) const;

 private:
  std::vector<std::shared_ptr<std::byte[]>> arenas_;
  std::vector<BoundVariable> variables_;
  std::map<std::string, const std::atomic<std::uint64_t>*> versions_;
  std::vector<RegisterSlot> slots_;
  std::vector<int> first_slot_;
};

}  // namespace weir::internal
