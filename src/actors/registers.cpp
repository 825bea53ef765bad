#include "actors/registers.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "common/allocator.hpp"

namespace weir::internal {

namespace {
std::size_t AlignUp(std::size_t bytes) { return (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment; }
}  // namespace

RegisterStore::RegisterStore(const Plan& plan, const VariableResolver& variables) {
  // A call input's register borrows the call's own tensor (the call keeps it alive and unchanged
  // until it completes), so the input actor sets the slot's pointer instead of copying; one bound for
  // a device is copied into pinned memory, from which the device copies it.
  const auto borrowed = [&](const RegisterDesc& reg) {
    return plan.tasks[static_cast<std::size_t>(reg.producer)].kind == TaskKind::kInput && !reg.pinned;
  };
  // One arena per memory, in order of first use: its bytes, then its allocation.
  struct Memory {
    Device device;
    bool pinned;
    std::size_t bytes = 0;
    std::byte* base = nullptr;
  };
  std::vector<Memory> memories;
  const auto memory_of = [&](const RegisterDesc& reg) -> Memory& {
    for (Memory& memory : memories) {
      if (memory.device == reg.device && memory.pinned == reg.pinned) return memory;
    }
    return memories.emplace_back(Memory{reg.device, reg.pinned});
  };
  for (const RegisterDesc& reg : plan.registers) {
    if (!reg.variable.empty() || borrowed(reg)) continue;
    memory_of(reg).bytes += AlignUp(reg.slot_bytes) * static_cast<std::size_t>(reg.register_num);
  }
  for (Memory& memory : memories) {
    arenas_.push_back(memory.pinned ? AllocatePinned(memory.bytes) : Allocate(memory.device, memory.bytes));
    memory.base = arenas_.back().get();
    memory.bytes = 0;  // from here on: the bytes handed out
  }
  for (const RegisterDesc& reg : plan.registers) {
    first_slot_.push_back(static_cast<int>(slots_.size()));
    if (!reg.variable.empty()) {
      BoundVariable bound = variables(reg.variable, reg.device);
      Tensor& variable = bound.storage;
      if (reg.variable_offset + reg.slot_bytes > variable.NumBytes() || reg.register_num != 1 ||
          !(variable.GetDevice() == reg.device)) {
        throw std::logic_error(fmt::format("[runtime] variable '{}' has {} bytes on {}, its register {} from byte {} "
                                           "on {}",
                                           reg.variable, variable.NumBytes(), variable.GetDevice().ToString(),
                                           reg.slot_bytes, reg.variable_offset, reg.device.ToString()));
      }
      slots_.push_back({static_cast<std::byte*>(variable.RawData()) + reg.variable_offset, nullptr, false});
      if (bound.version == nullptr) {
        throw std::logic_error(fmt::format("[runtime] variable '{}' has no version", reg.variable));
      }
      versions_.emplace(reg.variable, bound.version.get());
      variables_.push_back(std::move(bound));
      continue;
    }
    for (int i = 0; i < reg.register_num; ++i) {
      if (borrowed(reg)) {
        slots_.push_back({nullptr, nullptr, false});
        continue;
      }
      Memory& memory = memory_of(reg);
      slots_.push_back({memory.base + memory.bytes, nullptr, false});
      memory.bytes += AlignUp(reg.slot_bytes);
    }
  }
}

const std::atomic<std::uint64_t>& RegisterStore::VersionOf(const std::string& variable) const {
  const auto it = versions_.find(variable);
  if (it == versions_.end()) throw std::logic_error(fmt::format("[runtime] the plan binds no variable '{}'", variable));
  return *it->second;
}

}  // namespace weir::internal
