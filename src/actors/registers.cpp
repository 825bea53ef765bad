#include "actors/registers.hpp"

#include "common/allocator.hpp"

namespace weir::internal {

namespace {
std::size_t AlignUp(std::size_t bytes) { return (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment; }
}  // namespace

RegisterStore::RegisterStore(const Plan& plan) {
  for (const RegisterDesc& reg : plan.registers) {
    arena_bytes_ += AlignUp(reg.slot_bytes) * static_cast<std::size_t>(reg.register_num);
  }
  arena_ = Allocate(Device::Cpu(), arena_bytes_);
  std::size_t offset = 0;
  for (const RegisterDesc& reg : plan.registers) {
    first_slot_.push_back(static_cast<int>(slots_.size()));
    for (int i = 0; i < reg.register_num; ++i) {
      slots_.push_back({arena_.get() + offset, nullptr, false});
      offset += AlignUp(reg.slot_bytes);
    }
  }
}

}  // namespace weir::internal
