#pragma once
// Register memory of one instantiated plan: every slot of every register, carved out of arenas
// allocated up front (one per memory: the host's, pinned host memory, each CUDA device's), so no call
// allocates register memory. Two kinds of register own no arena memory: a variable's (its slot is the
// variable's storage) and a call input's that stays on the host (its slot points at the call's input
// tensor, set by the input actor for each call).
#include <cstddef>
#include <functional>
#include <string>
#include <memory>
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

/// The storage of a session variable, by name, on the device whose kernels use it.
using VariableResolver = std::function<Tensor(const std::string& name, Device device)>;

class RegisterStore {
 public:
  /// Registers of variables use the variables' own storage (from `variables`), kept alive here.
  RegisterStore(const Plan& plan, const VariableResolver& variables);
  RegisterSlot& Slot(int register_id, int slot) {
    return slots_[static_cast<std::size_t>(first_slot_[static_cast<std::size_t>(register_id)] + slot)];
  }

 private:
  std::vector<std::shared_ptr<std::byte[]>> arenas_;
  std::vector<Tensor> variables_;
  std::vector<RegisterSlot> slots_;
  std::vector<int> first_slot_;
};

}  // namespace weir::internal
