// The registry-wide checks that an op's tests left nothing out, wherever its test file lives: every op
// with a gradient rule had its gradient compared with finite differences (tests/gradient_check.hpp),
// every CUDA kernel ran conformance samples (tests/conformance.hpp), every op declaring SBP signatures
// had them checked (tests/sbp_check.hpp), in some suite. The suites write what they checked to
// WEIR_TEST_COVERAGE_DIR as they exit (tests/coverage.hpp); meson runs this suite after every other
// one, alone.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/cuda_backend.hpp"
#include "common/cuda_runtime.hpp"
#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"

namespace {

using namespace weir;
using namespace weir::internal;

// Every entry of `kind` that some suite wrote.
std::set<std::string, std::less<>> Covered(const std::string& kind) {
  const char* dir = std::getenv("WEIR_TEST_COVERAGE_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "run it with `meson test`, which sets WEIR_TEST_COVERAGE_DIR for every suite");
  std::set<std::string, std::less<>> covered;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != "." + kind) continue;
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) covered.insert(line);
    }
  }
  REQUIRE_MESSAGE(!covered.empty(), fmt::format("no suite wrote its {} to {}: run the whole `meson test`", kind, dir));
  return covered;
}

// Ops whose gradient rule no finite difference can check, with the reason.
const std::set<std::string, std::less<>> kGradientUncheckable = {
    // Draws a new mask at every call, so loss(x + h) and loss(x - h) see different masks; its
    // gradient is checked against the call's own mask instead (tests/graph/test_gradients.cpp).
    "dropout",
    // The straight-through estimator: dy passes unchanged, where the true derivative of the rounding is
    // 0 almost everywhere (OneFlow's rule); tests/python/test_oneflow_compat.py checks dx == dy.
    "fake_quantization",
    // Draws new classes at every call, so loss(w + h) and loss(w - h) see different samples;
    // tests/python/test_dynamic_blobs.py checks that the weight's gradient is the sampled rows' gradients
    // added back into their rows.
    "distributed_partial_fc_sample",
};

// CUDA kernels that conformance samples cannot run: a transfer needs the processes of a session
// (tests/api/test_gpu_sessions.cpp runs it between processes, one GPU each); categorical_ordinal_encode
// numbers a call's new keys in the order its GPU threads claim them, not the CPU's position order
// (tests/kernels/test_cuda_kernels.cpp checks its numbering on a GPU).
const std::set<std::string, std::less<>> kSampledElsewhere = {"transfer", "categorical_ordinal_encode"};
// CUDA kernels of a dtype the CPU has no kernel for, each checked on a GPU by a test of its own against
// the CPU's f32 kernel (tests/kernels/test_cuda_kernels.cpp): f16 matmul and convolutions (the CPU's
// mixed precision is bf16).
const std::set<std::string, std::less<>> kCheckedAgainstF32 = {"matmul f16", "conv2d f16", "conv2d_grad_data f16",
                                                               "conv2d_grad_filter f16"};

}  // namespace

TEST_CASE("every op with a gradient rule has a finite-difference gradient check") {
  const auto checked = Covered("gradients");
  std::vector<std::string> unchecked;
  for (std::string_view type : RegisteredOpTypes()) {
    if (!FindOp(type).gradient) continue;
    if (!checked.contains(type) && !kGradientUncheckable.contains(type)) unchecked.emplace_back(type);
  }
  INFO("ops with a gradient rule but no CheckGradients in any suite: ", fmt::format("{}", fmt::join(unchecked, ", ")));
  CHECK(unchecked.empty());
}

TEST_CASE("every CUDA kernel has conformance samples, run on the CPU kernels here and compared on a GPU") {
  if (!CudaBuilt()) {
    MESSAGE("skipped: this build has no CUDA backend");
    return;
  }
  LoadCudaBackend();  // its kernels register as it loads
  const auto sampled = Covered("samples");
  std::vector<std::string> missing;
  for (const KernelKey& key : RegisteredKernels(Device::Kind::kCuda)) {
    const std::string entry = fmt::format("{} {}", key.op_type, key.dtype);
    if (kSampledElsewhere.contains(key.op_type) || kCheckedAgainstF32.contains(entry)) continue;
    if (!sampled.contains(entry)) missing.push_back(entry);
  }
  INFO("CUDA kernels without a conformance sample in any suite: ", fmt::format("{}", fmt::join(missing, ", ")));
  CHECK(missing.empty());
}

TEST_CASE("every op declaring SBP signatures has them checked on 2 and 3 devices") {
  const auto checked = Covered("sbp");
  std::vector<std::string> unchecked;
  for (std::string_view type : RegisteredOpTypes()) {
    // The data pipeline's ops are not: their inputs are tensor_buffers of records and images, and a
    // reader's or a random op's pieces are each device's own draws, not slices of one result.
    // tests/python/test_data_pipeline.py checks how they split (each device reads its own part files).
    if (!FindOp(type).sbp || FindOp(type).host_only) continue;
    if (!checked.contains(type)) unchecked.emplace_back(type);
  }
  INFO("ops declaring SBP signatures that no suite checked: ", fmt::format("{}", fmt::join(unchecked, ", ")));
  CHECK(unchecked.empty());
}
