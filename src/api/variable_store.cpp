#include "api/variable_store.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "common/allocator.hpp"

namespace weir::internal {

// FNV-1a: a stable hash, so a variable's initial value depends only on its name and the seed.
std::uint64_t VariableStore::SeedFor(const std::string& name) const {
  std::uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash ^ seed_;
}

Tensor VariableStore::GetOrCreate(const VariableAttrs& attrs, std::string_view job_name) {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(attrs.name);
  if (it != variables_.end()) {
    const Entry& entry = it->second;
    if (entry.spec.shape != attrs.spec.shape || entry.spec.dtype != attrs.spec.dtype) {
      throw std::invalid_argument(fmt::format(
          "[variable] '{}' is {}{} in job '{}' but {}{} in job '{}': variables are shared by name", attrs.name,
          *entry.spec.dtype, entry.spec.shape, entry.defined_by, *attrs.spec.dtype, attrs.spec.shape, job_name));
    }
    return entry.value;
  }
  Tensor value = Initialize(attrs.spec.initializer, attrs.spec.shape, *attrs.spec.dtype, SeedFor(attrs.name));
  variables_.emplace(attrs.name, Entry{value, attrs.spec, std::string(job_name)});
  return value;
}

Tensor VariableStore::Find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  return it == variables_.end() ? Tensor() : it->second.value;
}

namespace {
Tensor OnDevice(const Tensor& value, Device device) {
  Tensor copy(value.GetShape(), value.GetDType(), device);
  CopyBytes(copy.RawData(), device, value.RawData(), value.GetDevice(), value.NumBytes());
  return copy;
}
}  // namespace

Tensor VariableStore::Resident(const std::string& name, Device device) {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  if (it == variables_.end()) throw std::logic_error(fmt::format("[variables] no variable named '{}'", name));
  Entry& entry = it->second;
  if (!(entry.value.GetDevice() == device)) {
    if (entry.bound) {
      throw std::invalid_argument(fmt::format(
          "[variables] '{}' lives on {}, where a job uses it; a job on {} cannot use it too (place the jobs that share "
          "variables on the same device)", name, entry.value.GetDevice().ToString(), device.ToString()));
    }
    entry.value = OnDevice(entry.value, device);
  }
  entry.bound = true;
  return entry.value;
}

Tensor VariableStore::Read(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  return it == variables_.end() ? Tensor() : OnDevice(it->second.value, Device::Cpu());
}

std::map<std::string, Tensor> VariableStore::Snapshot() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, Tensor> copies;
  for (const auto& [name, entry] : variables_) copies.emplace(name, OnDevice(entry.value, Device::Cpu()));
  return copies;
}

void VariableStore::Assign(const std::string& name, const Tensor& value) {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  if (it == variables_.end()) throw std::invalid_argument(fmt::format("[variables] no variable named '{}'", name));
  Tensor& target = it->second.value;
  if (!value.Defined() || value.GetShape() != target.GetShape() || value.GetDType() != target.GetDType()) {
    throw std::invalid_argument(fmt::format("[variables] '{}' is {}{}, the value given is {}", name,
                                            target.GetDType(), target.GetShape(),
                                            value.Defined() ? fmt::format("{}{}", value.GetDType(), value.GetShape())
                                                            : std::string("undefined")));
  }
  CopyBytes(target.RawData(), target.GetDevice(), value.RawData(), value.GetDevice(), target.NumBytes());
  it->second.version->fetch_add(1, std::memory_order_release);
}

void VariableStore::Reinitialize(const std::string& name) {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  if (it == variables_.end()) return;
  Entry& entry = it->second;
  const Tensor fresh = Initialize(entry.spec.initializer, entry.spec.shape, *entry.spec.dtype, SeedFor(name));
  CopyBytes(entry.value.RawData(), entry.value.GetDevice(), fresh.RawData(), fresh.GetDevice(), fresh.NumBytes());
  entry.version->fetch_add(1, std::memory_order_release);
}

std::shared_ptr<std::atomic<std::uint64_t>> VariableStore::Version(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = variables_.find(name);
  return it == variables_.end() ? nullptr : it->second.version;
}

}  // namespace weir::internal
