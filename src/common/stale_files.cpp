#include "common/stale_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <fstream>
#include <random>

#include <fmt/format.h>

namespace weir::internal {

std::string MachineIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat net {};
  const std::string netns = stat("/proc/self/ns/net", &net) == 0 ? std::to_string(net.st_ino) : "?";
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return fmt::format("{}/{}/{}", boot, netns, host);
}

std::string MachineTag() {
  static const std::string tag = [] {
    std::uint32_t hash = 2166136261u;  // FNV-1a: the same in every process (std::hash need not be)
    for (const char c : MachineIdentity()) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 16777619u;
    }
    return fmt::format("{:08x}", hash);
  }();
  return tag;
}

bool ProcessIsGone(std::int64_t pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

std::string OwnedSuffix() {
  std::random_device device;
  const std::uint64_t value = (std::uint64_t{device()} << 32) ^ device();
  return fmt::format("{}-{}-{:016x}", MachineTag(), ::getpid(), value);
}

std::optional<std::int64_t> GoneOwner(std::string_view suffix) {
  const std::string tag = MachineTag();
  if (suffix.size() < tag.size() + 1 || suffix.substr(0, tag.size()) != tag || suffix[tag.size()] != '-') {
    return std::nullopt;
  }
  suffix.remove_prefix(tag.size() + 1);
  std::int64_t pid = 0;
  const auto [end, error] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), pid);
  if (error != std::errc() || end == suffix.data() || end == suffix.data() + suffix.size() || *end != '-') {
    return std::nullopt;
  }
  const std::string_view random(end + 1, static_cast<std::size_t>(suffix.data() + suffix.size() - (end + 1)));
  if (random.size() != 16 || random.find_first_not_of("0123456789abcdef") != std::string_view::npos) return std::nullopt;
  if (!ProcessIsGone(pid)) return std::nullopt;
  return pid;
}

}  // namespace weir::internal
