// Every op with a gradient rule has its gradient compared with finite differences in some C++ suite
// (tests/gradient_check.hpp's CheckGradients). The suites write the op types they checked to
// WEIR_GRADIENT_COVERAGE_DIR as they exit; meson runs this suite after every other one, alone.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/op_registry.hpp"

namespace {

// Ops whose gradient rule no finite difference can check, with the reason.
const std::set<std::string, std::less<>> kUncheckable = {
    // Draws a new mask at every call, so loss(x + h) and loss(x - h) see different masks; its
    // gradient is checked against the call's own mask instead (tests/graph/test_gradients.cpp).
    "dropout",
};

}  // namespace

TEST_CASE("every op with a gradient rule has a finite-difference gradient check") {
  const char* dir = std::getenv("WEIR_GRADIENT_COVERAGE_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "run it with `meson test`, which sets WEIR_GRADIENT_COVERAGE_DIR for every suite");
  std::set<std::string, std::less<>> checked;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".ops") continue;
    std::ifstream in(entry.path());
    for (std::string op; std::getline(in, op);) checked.insert(op);
  }
  REQUIRE_MESSAGE(!checked.empty(), fmt::format("no suite wrote its checked ops to {}: run the whole `meson test`", dir));
  std::vector<std::string> unchecked;
  for (std::string_view type : weir::internal::RegisteredOpTypes()) {
    if (!weir::internal::FindOp(type).gradient) continue;
    if (!checked.contains(type) && !kUncheckable.contains(type)) unchecked.emplace_back(type);
  }
  INFO("ops with a gradient rule but no CheckGradients in any suite: ", fmt::format("{}", fmt::join(unchecked, ", ")));
  CHECK(unchecked.empty());
}
