#pragma once
// The CUDA kernels against the CPU kernels, sample by sample. An op's test file lists its samples
// (shapes, dtypes, attributes, how to draw inputs) and calls CheckConformance: each sample runs on the
// CPU kernel here (a sample the GPU day can use must be valid for it), and on a machine with a GPU
// also on the CUDA kernel, on a device stream as the runtime runs it, on the same random inputs; the
// two must agree to rounding. Every (op, dtype) a sample ran is recorded (tests/coverage.hpp), and
// the coverage suite checks that every CUDA kernel has samples in some suite.
#include <any>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/tensor_meta.hpp"
#include "weir/tensor.hpp"

namespace weir::testing {

using weir::internal::TensorMeta;

struct Sample {
  std::string op;
  std::any attrs;
  std::vector<TensorMeta> inputs;
  std::vector<TensorMeta> outputs;
  bool positive = false;     // inputs drawn from (0.1, 2): the domain of log, sqrt, rsqrt, reciprocal
  std::int64_t classes = 0;  // > 0: integer inputs are labels in [0, classes)
  bool ties = false;         // float inputs drawn from {0, 1, 2}: equal values are common
  double low = -2.0;         // float inputs drawn from [low, high) (unless positive or ties)
  double high = 2.0;
  int distinct = -1;         // >= 0: that input's integers are distinct labels (at most `classes` of them)
};

/// The registry's key dtype: the first input's, or the first output's for ops without inputs.
DType KeyDType(const Sample& sample);
/// The op, its unary kind if any, and its input metas, for failure messages.
std::string Describe(const Sample& sample);

/// A random tensor of `meta` drawn as `sample` says; `distinct`: integers that are distinct labels.
Tensor RandomTensor(const TensorMeta& meta, const Sample& sample, std::mt19937& random, bool distinct = false);
/// The sample's inputs, drawn by RandomTensor; the one Sample::distinct names gets distinct labels.
std::vector<Tensor> RandomInputs(const Sample& sample, std::mt19937& random);

/// Runs the (op, device) kernel of `sample` on host inputs; CUDA runs on a device stream. Returns the
/// outputs and then the inputs as the kernel left them (updates write theirs in place), on the host.
std::vector<Tensor> RunOn(Device::Kind device, const Sample& sample, const std::vector<Tensor>& inputs);

struct Tolerance {
  double relative, absolute, norm;
};

/// The GPU's output agrees with the CPU's to rounding: the same infinities and NaNs; each finite element
/// within `relative` of the CPU's plus `absolute` times the output's largest magnitude (at least 1: the
/// random inputs are of order 1); and the whole within `norm` relative to the CPU's norm (plus that
/// absolute term, for outputs of zeros).
void CheckAgrees(const std::vector<float>& cpu, const std::vector<float>& gpu, const Tolerance& tolerance);
void CheckAgrees(const std::vector<double>& cpu, const std::vector<double>& gpu, const Tolerance& tolerance);

/// The CPU's and the GPU's results of one sample agree: floats to rounding (by dtype), the rest bytewise.
void CheckResultsAgree(const std::vector<Tensor>& cpu, const std::vector<Tensor>& gpu);

/// Runs every sample on the CPU kernel and, with a GPU, on the CUDA kernel too, comparing the two;
/// records each sample's (op, dtype) as covered. Samples of f16 and bf16 run only where both devices
/// have that kernel (the 16-bit types have kernels for mixed precision's ops only). Returns how many samples the GPU compared.
int CheckConformance(const std::vector<Sample>& samples, std::uint32_t seed);

}  // namespace weir::testing
