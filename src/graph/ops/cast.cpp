// cast: converts every element to another dtype (to bool: value != 0).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCast(const InferContext& ctx) {
  const auto& attrs = ctx.Get<CastAttrs>();
  switch (attrs.dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kI8:
    case DType::kBool:
    case DType::kF16:
    case DType::kBF16: break;
    case DType::kTensorBuffer: throw OpError(ctx.op_type, "cannot cast to tensor_buffer (only the data ops make one)");
    default:
      throw OpError(ctx.op_type, "unknown target dtype {}", static_cast<int>(attrs.dtype));
  }
  return {{ctx.inputs[0].shape, attrs.dtype}};
}

// The op that made `value` an integer: walking up through integer values only, the first producer
// that reads a floating input (argmax, a cast to an integer); else the value's own producer.
const OpNode& IntegerOrigin(const JobGraph& graph, int value) {
  const auto producer_of = [&graph](int v) -> const OpNode& {
    return graph.nodes[static_cast<std::size_t>(graph.values[static_cast<std::size_t>(v)].producer)];
  };
  std::vector<int> pending{value};
  std::vector<bool> seen(graph.values.size(), false);
  while (!pending.empty()) {
    const int current = pending.back();
    pending.pop_back();
    if (seen[static_cast<std::size_t>(current)]) continue;
    seen[static_cast<std::size_t>(current)] = true;
    const OpNode& node = producer_of(current);
    for (int input : node.inputs) {
      if (IsFloating(graph.values[static_cast<std::size_t>(input)].meta.dtype)) return node;
    }
    pending.insert(pending.end(), node.inputs.begin(), node.inputs.end());
  }
  return producer_of(value);
}

// Float to float: the gradient is cast back. Integers carry no gradient: an integer output never
// receives one, and a path from a differentiated blob to the loss through an integer value (after
// argmax, or a cast to an integer) is an error naming the op that made it integer, not a silent zero.
std::vector<Blob> CastGradient(const GradContext& ctx) {
  const Blob& x = ctx.inputs[0];
  const DType to = ctx.Get<CastAttrs>().dtype;
  if (!IsFloating(to)) return {Blob()};
  if (!IsFloating(x.GetDType())) {
    const OpNode& origin = IntegerOrigin(*x.Graph(), x.ValueId());
    throw OpError(ctx.op_type,
                  "no gradient flows through integer values: the loss depends on {} '{}' through the cast of {} "
                  "'{}' to {}",
                  origin.type, origin.name, x.GetDType(), x.Name(), to);
  }
  const Blob& dy = ctx.output_grads[0];
  return {x.GetDType() == to ? dy : Cast(dy, {.dtype = x.GetDType()})};
}

WEIR_REGISTER_OP({.type = "cast",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferCast,
                  .gradient = CastGradient,
                  .sbp = ElementwiseRule(),
                  .read_attrs = ReadAttrs<CastAttrs>(Attr("dtype", &CastAttrs::dtype))});

}  // namespace
}  // namespace internal

Blob Cast(const Blob& x, CastAttrs attrs, std::string_view name) { return internal::AddOp1("cast", {x}, attrs, name); }

}  // namespace weir
