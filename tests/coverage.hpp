#pragma once
// What a suite checked, for the registry-wide checks of the coverage suite (tests/graph/test_coverage.cpp),
// which `meson test` runs after every other suite, alone: the ops whose gradients were compared with
// finite differences, the (op, dtype) pairs that ran conformance samples, the ops whose SBP signatures
// were checked. With WEIR_TEST_COVERAGE_DIR set (meson sets it for every suite), each kind is written
// at exit to <dir>/<program>.<kind>, one entry per line. So an op's checks can live in its own test
// file, in any suite, and still count.
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace weir::testing {

class Coverage {
 public:
  /// Records `entry` as checked under `kind` ("gradients", "samples", "sbp").
  static void Add(const std::string& kind, std::string entry) { Get().entries_[kind].insert(std::move(entry)); }

  ~Coverage() {
    const char* dir = std::getenv("WEIR_TEST_COVERAGE_DIR");
    if (dir == nullptr) return;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    for (const auto& [kind, entries] : entries_) {
      std::ofstream out(std::filesystem::path(dir) / (std::string(program_invocation_short_name) + "." + kind));
      for (const std::string& entry : entries) out << entry << '\n';
    }
  }

 private:
  Coverage() = default;
  static Coverage& Get() {
    static Coverage coverage;
    return coverage;
  }
  std::map<std::string, std::set<std::string>> entries_;
};

}  // namespace weir::testing
