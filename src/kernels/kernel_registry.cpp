#include <algorithm>
#include <mutex>
#include <vector>

#include "kernels/kernel.hpp"

namespace weir::internal {

namespace {

struct Entry {
  KernelKey key;
  KernelFactory factory;
};

// Function-local static: registrars in other translation units may run before this file's globals.
std::vector<Entry>& Entries() {
  static std::vector<Entry> entries;
  return entries;
}
std::mutex& EntriesMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

void RegisterKernel(KernelKey key, KernelFactory factory) {
  std::lock_guard lock(EntriesMutex());
  for (Entry& entry : Entries()) {
    if (entry.key == key) {
      entry.factory = factory;
      return;
    }
  }
  Entries().push_back({std::move(key), factory});
}

KernelFactory FindKernel(const KernelKey& key) {
  std::lock_guard lock(EntriesMutex());
  for (const Entry& entry : Entries()) {
    if (entry.key == key) return entry.factory;
  }
  return nullptr;
}

std::string RegisteredDTypes(std::string_view op_type, Device::Kind device) {
  std::lock_guard lock(EntriesMutex());
  std::vector<std::string_view> names;
  for (const Entry& entry : Entries()) {
    if (entry.key.op_type == op_type && entry.key.device == device) names.push_back(Name(entry.key.dtype));
  }
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

std::vector<KernelKey> RegisteredKernels(Device::Kind device) {
  std::vector<KernelKey> keys;
  {
    std::lock_guard lock(EntriesMutex());
    for (const Entry& entry : Entries()) {
      if (entry.key.device == device) keys.push_back(entry.key);
    }
  }
  std::sort(keys.begin(), keys.end(), [](const KernelKey& a, const KernelKey& b) {
    return a.op_type != b.op_type ? a.op_type < b.op_type : a.dtype < b.dtype;
  });
  return keys;
}

}  // namespace weir::internal
