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
  // until it completes), so the input actor sets the slot's pointer instead of copying.
  const auto borrowed = [&](const RegisterDesc& reg) {
    return plan.tasks[static_cast<std::size_t>(reg.producer)].kind == TaskKind::kInput;
  };
  std::size_t arena_bytes = 0;
  for (const RegisterDesc& reg : plan.registers) {
    if (!reg.variable.empty() || borrowed(reg)) continue;
    arena_bytes += AlignUp(reg.slot_bytes) * static_cast<std::size_t>(reg.register_num);
  }
  arena_ = Allocate(Device::Cpu(), arena_bytes);
  std::size_t offset = 0;
  for (const RegisterDesc& reg : plan.registers) {
    first_slot_.push_back(static_cast<int>(slots_.size()));
    if (!reg.variable.empty()) {
      Tensor variable = variables(reg.variable);
      if (reg.variable_offset + reg.slot_bytes > variable.NumBytes() || reg.register_num != 1) {
        throw std::logic_error(fmt::format("[runtime] variable '{}' has {} bytes, its register {} from byte {}",
                                           reg.variable, variable.NumBytes(), reg.slot_bytes, reg.variable_offset));
      }
      slots_.push_back({static_cast<std::byte*>(variable.RawData()) + reg.variable_offset, nullptr, false});
      variables_.push_back(std::move(variable));
      continue;
    }
    for (int i = 0; i < reg.register_num; ++i) {
      if (borrowed(reg)) {
        slots_.push_back({nullptr, nullptr, false});
        continue;
      }
      slots_.push_back({arena_.get() + offset, nullptr, false});
      offset += AlignUp(reg.slot_bytes);
    }
  }
}

}  // namespace weir::internal
