#pragma once
// Runs one op's CPU kernel directly on tensors, without a job or the runtime: shape inference from
// the op registry, the kernel from the kernel registry, freshly allocated outputs.
#include <any>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"
#include "weir/tensor.hpp"

namespace weir::testing {

/// Runs the CPU kernel of `type` (the registry's key: the first input's dtype, or the first output's)
/// named `name` on `inputs` of `input_metas`; returns fresh outputs of `output_metas`. The kernel is
/// copy `shard` of `shards` (KernelSetup::shard: a piece of a split op).
inline std::vector<Tensor> RunCpuKernel(std::string_view type, std::string_view name, const std::any& attrs,
                                        const std::vector<Tensor>& inputs,
                                        const std::vector<internal::TensorMeta>& input_metas,
                                        const std::vector<internal::TensorMeta>& output_metas, int shard = 0,
                                        int shards = 1) {
  using namespace weir::internal;
  const DType key_dtype = input_metas.empty() ? output_metas.at(0).dtype : input_metas[0].dtype;
  KernelFactory factory = FindKernel({std::string(type), Device::Kind::kCpu, key_dtype});
  if (factory == nullptr) throw std::invalid_argument(fmt::format("no CPU kernel for {} {}", type, key_dtype));
  KernelSetup setup{type, name, &attrs, input_metas, output_metas, Device::Cpu()};
  setup.shard = shard;
  setup.shards = shards;
  auto kernel = factory(setup);
  std::vector<Tensor> outputs;
  std::vector<ConstTensorView> in_views;
  std::vector<TensorView> out_views;
  for (std::size_t i = 0; i < inputs.size(); ++i) in_views.push_back({inputs[i].RawData(), &input_metas[i]});
  for (const TensorMeta& meta : output_metas) outputs.emplace_back(meta.shape, meta.dtype);
  for (std::size_t i = 0; i < outputs.size(); ++i) out_views.push_back({outputs[i].RawData(), &output_metas[i]});
  kernel->Run(in_views, out_views);
  return outputs;
}

/// The op's CPU kernel on `inputs`, the output metas inferred by the op.
inline std::vector<Tensor> RunOp(std::string_view type, std::any attrs, const std::vector<Tensor>& inputs) {
  using namespace weir::internal;
  std::vector<TensorMeta> input_metas;
  for (const Tensor& t : inputs) input_metas.push_back({t.GetShape(), t.GetDType()});
  const OpDef& def = FindOp(type);
  const std::vector<TensorMeta> output_metas = def.infer(InferContext{type, type, &attrs, input_metas});
  return RunCpuKernel(type, type, attrs, inputs, input_metas, output_metas);
}

/// Checks that `tensor` has dtype T, `shape`, and elements close to `expected` (relative tolerance
/// `epsilon`, absolute near 0).
template <typename T>
void CheckClose(const Tensor& tensor, const Shape& shape, const std::vector<double>& expected, double epsilon = 1e-6) {
  CHECK(tensor.GetDType() == DTypeOf<T>());
  CHECK(tensor.GetShape() == shape);
  const std::vector<T> got = tensor.ToVector<T>();
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i);
    CHECK(static_cast<double>(got[i]) == doctest::Approx(expected[i]).epsilon(epsilon));
  }
}

}  // namespace weir::testing
