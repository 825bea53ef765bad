#include "graph/autodiff.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "graph/op_registry.hpp"
#include "weir/half.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

namespace {

Tensor OnesOf(const Shape& shape, DType dtype) {
  Tensor ones(shape, dtype);
  const auto fill = [&]<typename T>(T one) {
    auto* data = static_cast<T*>(ones.RawData());
    std::fill(data, data + ones.NumElements(), one);
  };
  switch (dtype) {
    case DType::kF32: fill(1.f); break;
    case DType::kF64: fill(1.0); break;
    case DType::kI32: fill(std::int32_t{1}); break;
    case DType::kI64: fill(std::int64_t{1}); break;
    case DType::kI8: fill(std::int8_t{1}); break;
    case DType::kU8:
    case DType::kBool: fill(std::uint8_t{1}); break;
    case DType::kF16: fill(half_bits::Float16FromFloat(1.f)); break;
    case DType::kBF16: fill(half_bits::BFloat16FromFloat(1.f)); break;
    case DType::kTensorBuffer: throw std::invalid_argument("[gradients] a tensor-buffer loss has no gradient");
  }
  return ones;
}

}  // namespace

Blob SumBlobs(const std::vector<Blob>& blobs) {
  Blob sum;
  for (const Blob& blob : blobs) {
    if (!blob.Defined()) continue;
    sum = sum.Defined() ? Add(sum, blob) : blob;
  }
  return sum;
}

std::vector<Blob> BuildGradients(const Blob& loss, const std::vector<Blob>& wrt, const Blob& seed) {
  if (!loss.Defined()) throw std::invalid_argument("[gradients] argument 'loss' is an undefined blob");
  const std::shared_ptr<JobGraph>& graph = loss.Graph();
  for (const Blob& x : wrt) {
    if (!x.Defined() || x.Graph() != graph) {
      throw std::invalid_argument("[gradients] every blob in 'wrt' must belong to the loss's job");
    }
  }
  // Only values downstream of some wrt blob and upstream of the loss carry gradients.
  const std::size_t node_count = graph->nodes.size();  // gradient ops appended below are not visited
  std::vector<bool> from_wrt(graph->values.size(), false);
  for (const Blob& x : wrt) from_wrt[static_cast<std::size_t>(x.ValueId())] = true;
  for (std::size_t n = 0; n < node_count; ++n) {
    const OpNode& node = graph->nodes[n];
    bool reached = false;
    for (int value : node.inputs) reached = reached || from_wrt[static_cast<std::size_t>(value)];
    if (reached) {
      for (int value : node.outputs) from_wrt[static_cast<std::size_t>(value)] = true;
    }
  }
  std::vector<bool> to_loss(graph->values.size(), false);
  to_loss[static_cast<std::size_t>(loss.ValueId())] = true;
  for (std::size_t n = node_count; n-- > 0;) {
    const OpNode& node = graph->nodes[n];
    bool reaches = false;
    for (int value : node.outputs) reaches = reaches || to_loss[static_cast<std::size_t>(value)];
    if (reaches) {
      for (int value : node.inputs) to_loss[static_cast<std::size_t>(value)] = true;
    }
  }
  const auto carries = [&](int value) {
    return from_wrt[static_cast<std::size_t>(value)] && to_loss[static_cast<std::size_t>(value)];
  };

  std::vector<std::vector<Blob>> partials(graph->values.size());
  if (seed.Defined()) {
    if (seed.GetShape() != loss.GetShape() || seed.GetDType() != loss.GetDType()) {
      throw std::invalid_argument(fmt::format("[gradients] seed {}{} does not match loss {}{}", seed.GetDType(),
                                              seed.GetShape(), loss.GetDType(), loss.GetShape()));
    }
    partials[static_cast<std::size_t>(loss.ValueId())].push_back(seed);
  } else {
    // d loss / d loss is one in the loss's dtype: an integer loss has integer gradients, which
    // casts turn back into floating ones on their way to the variables (OneFlow's rule).
    const Tensor ones = OnesOf(loss.GetShape(), loss.GetDType());
    partials[static_cast<std::size_t>(loss.ValueId())].push_back(AddConstant(graph, ones, {}));
  }

  for (std::size_t n = node_count; n-- > 0;) {
    const OpNode node = graph->nodes[n];  // a copy: gradient ops grow the node vector
    bool any_output_grad = false;
    std::vector<Blob> output_grads;
    for (int value : node.outputs) {
      Blob grad = carries(value) ? SumBlobs(partials[static_cast<std::size_t>(value)]) : Blob();
      any_output_grad = any_output_grad || grad.Defined();
      output_grads.push_back(grad);
    }
    if (!any_output_grad) continue;
    std::vector<bool> needs_grad;
    bool any_needed = false;
    for (int value : node.inputs) {
      needs_grad.push_back(carries(value));
      any_needed = any_needed || needs_grad.back();
    }
    if (!any_needed) continue;
    const OpDef& def = FindOp(node.type);
    if (!def.gradient) {
      throw std::invalid_argument(fmt::format("[{}] op '{}' has no gradient, but the loss depends on its input",
                                              node.type, node.name));
    }
    GradContext context{node.type, &node.attrs, {}, {}, std::move(output_grads), std::move(needs_grad)};
    for (int value : node.inputs) context.inputs.emplace_back(graph, value);
    for (int value : node.outputs) context.outputs.emplace_back(graph, value);
    std::vector<Blob> input_grads;
    {
      const PlacementOverride placed(*graph, node.placement);  // a gradient runs where its op runs
      input_grads = def.gradient(context);
    }
    if (input_grads.size() != node.inputs.size()) {
      throw std::logic_error(fmt::format("[{}] gradient rule returned {} gradients for {} inputs", node.type,
                                         input_grads.size(), node.inputs.size()));
    }
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (!context.needs_grad[i] || !input_grads[i].Defined()) continue;
      const Blob& grad = input_grads[i];
      const ValueInfo& input = graph->values[static_cast<std::size_t>(node.inputs[i])];
      if (grad.GetShape() != input.meta.shape || grad.GetDType() != input.meta.dtype) {
        throw std::logic_error(fmt::format("[{}] gradient of input {} is {}{}, expected {}{}", node.type, i,
                                           grad.GetDType(), grad.GetShape(), input.meta.dtype, input.meta.shape));
      }
      partials[static_cast<std::size_t>(node.inputs[i])].push_back(grad);
    }
  }

  std::vector<Blob> grads;
  for (const Blob& x : wrt) grads.push_back(SumBlobs(partials[static_cast<std::size_t>(x.ValueId())]));
  return grads;
}

}  // namespace weir::internal

namespace weir {

std::vector<Blob> Gradients(const Blob& y, const std::vector<Blob>& xs) { return internal::BuildGradients(y, xs); }

}  // namespace weir
