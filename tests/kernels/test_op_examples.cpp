// Every op that declares examples (OpDef::examples, graph/op_registry.hpp) is checked on them here, so
// that a new op needs no C++ test file of its own: its CUDA kernel against its CPU kernel
// (tests/conformance.hpp; on a machine with a GPU), its gradient against finite differences
// (tests/gradient_check.hpp; the examples whose floating inputs are f64 and few), and every SBP
// signature it declares (tests/sbp_check.hpp), on a job of the op and, where it has a gradient rule,
// of its gradient. What ran is recorded for the coverage suite, like the checks in the ops' own files.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "conformance.hpp"
#include "gradient_check.hpp"
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "sbp_check.hpp"
#include "weir/weir.hpp"

namespace {

using namespace weir;
using namespace weir::internal;
using namespace weir::testing;

// A finite-difference check runs the loss twice per element: examples with more floating elements
// are left to the GPU's agreement and the SBP check.
constexpr std::int64_t kMaxDifferencedElements = 200;

std::vector<Blob> AddExampleOp(const OpDef& def, const std::vector<Blob>& inputs, const std::any& attrs) {
  return def.build ? def.build(inputs, attrs, "") : AddOp(def.type, inputs, attrs, "");
}

std::vector<Blob> Placeholders(JobBuilder& builder, const OpExample& example) {
  std::vector<Blob> placeholders;
  for (std::size_t i = 0; i < example.inputs.size(); ++i) {
    placeholders.push_back(builder.Placeholder(fmt::format("x{}", i), example.inputs[i].shape, example.inputs[i].dtype));
  }
  return placeholders;
}

// The example as a conformance sample, its outputs inferred by building the op once.
Sample SampleOf(const OpDef& def, const OpExample& example) {
  JobBuilder builder("example", JobType::kPredict);
  Sample sample;
  sample.op = std::string(def.type);
  sample.attrs = example.attrs;
  sample.inputs = example.inputs;
  sample.classes = example.classes;
  sample.ties = example.ties;
  sample.low = example.low;
  sample.high = example.high;
  for (const Blob& out : AddExampleOp(def, Placeholders(builder, example), example.attrs)) {
    sample.outputs.push_back({out.GetShape(), out.GetDType()});
  }
  return sample;
}

bool Differentiable(const OpDef& def, const OpExample& example) {
  if (!def.gradient) return false;
  std::int64_t elements = 0;
  for (const TensorMeta& meta : example.inputs) {
    if (!IsFloating(meta.dtype)) continue;
    if (meta.dtype != DType::kF64) return false;
    elements += meta.shape.NumElements();
  }
  return elements > 0 && elements <= kMaxDifferencedElements;
}

// A job of the op on the example's shapes, ending in the gradient of its floating inputs where the
// op has a gradient rule (so the gradient ops' signatures are checked too).
Job SbpJob(const OpDef& def, const OpExample& example) {
  JobBuilder builder(fmt::format("{}_sbp", def.type), JobType::kPredict);
  const std::vector<Blob> inputs = Placeholders(builder, example);
  const Blob y = AddExampleOp(def, inputs, example.attrs)[0];
  std::vector<Blob> floating;
  for (const Blob& input : inputs) {
    if (IsFloating(input.GetDType())) floating.push_back(input);
  }
  if (!def.gradient || floating.empty() || !IsFloating(y.GetDType())) {
    builder.Output("y", y);
    return builder.Build();
  }
  const std::vector<Blob> grads = Gradients(ReduceSum(Mul(y, y)), floating);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].Defined()) builder.Output(fmt::format("dx{}", i), grads[i]);
  }
  return builder.Build();
}

bool AllNonEmpty(const OpExample& example) {
  for (const TensorMeta& meta : example.inputs) {
    if (meta.shape.NumElements() == 0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("every op's examples: the CUDA kernel against the CPU's, gradients against finite differences, SBP signatures") {
  Session session;
  int ops = 0;
  for (std::string_view type : RegisteredOpTypes()) {
    const OpDef& def = FindOp(type);
    if (!def.examples) continue;
    CAPTURE(type);
    const std::vector<OpExample> examples = def.examples();
    REQUIRE(!examples.empty());
    ++ops;
    std::vector<Sample> samples;
    for (const OpExample& example : examples) {
      REQUIRE(!example.inputs.empty());  // ops without inputs are checked in their test files
      samples.push_back(SampleOf(def, example));
    }
    CheckConformance(samples, 11);

    std::mt19937 random(13);
    for (std::size_t i = 0; i < examples.size(); ++i) {
      if (!Differentiable(def, examples[i])) continue;
      CheckGradients(session, Describe(samples[i]), RandomInputs(samples[i], random),
                     [&](const std::vector<Blob>& in) { return AddExampleOp(def, in, examples[i].attrs)[0]; });
    }

    if (!def.sbp) continue;
    const auto example = std::find_if(examples.begin(), examples.end(), AllNonEmpty);
    REQUIRE(example != examples.end());
    const Sample& sample = samples[static_cast<std::size_t>(example - examples.begin())];
    const std::set<std::string> checked = CheckSbpSignatures(SbpJob(def, *example), [&](const std::vector<TensorMeta>& metas) {
      std::mt19937 draws(7);
      std::vector<Tensor> inputs;
      for (const TensorMeta& meta : metas) inputs.push_back(RandomTensor(meta, sample, draws));
      return inputs;
    });
    CHECK(checked.count(std::string(type)) == 1);
  }
  MESSAGE(ops, " ops checked on their own examples");
  CHECK(ops > 0);
}
