// transpose: permutes the axes; output axis i is input axis perm[i].
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferTranspose(const InferContext& ctx) {
  const auto& attrs = ctx.Get<TransposeAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  const int rank = x.shape.Rank();
  const auto not_a_permutation = [&] {
    return OpError(ctx.op_type, "perm [{}] is not a permutation of 0..{} for x {}", fmt::join(attrs.perm, ","),
                   rank - 1, x.shape);
  };
  if (static_cast<int>(attrs.perm.size()) != rank) throw not_a_permutation();
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  std::vector<std::int64_t> dims;
  for (int axis : attrs.perm) {
    if (axis < 0 || axis >= rank || seen[static_cast<std::size_t>(axis)]) throw not_a_permutation();
    seen[static_cast<std::size_t>(axis)] = true;
    dims.push_back(x.shape[axis]);
  }
  return {{Shape(std::move(dims)), x.dtype}};
}

// Output axis i is input axis perm[i], so the gradient moves axis i back to perm[i].
std::vector<Blob> TransposeGradient(const GradContext& ctx) {
  const std::vector<int>& perm = ctx.Get<TransposeAttrs>().perm;
  std::vector<int> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
  return {Transpose(ctx.output_grads[0], {.perm = std::move(inverse)})};
}

// A split moves with its axis: input axis perm[i] becomes output axis i.
std::vector<SbpSignature> TransposeSbp(const SbpContext& ctx) {
  const std::vector<int>& perm = ctx.Get<TransposeAttrs>().perm;
  std::vector<SbpSignature> signatures;
  for (std::size_t i = 0; i < perm.size(); ++i) signatures.push_back({{Sbp::S(perm[i])}, {Sbp::S(static_cast<int>(i))}});
  signatures.push_back({{Sbp::P()}, {Sbp::P()}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "transpose",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferTranspose,
                  .gradient = TransposeGradient,
                  .sbp = TransposeSbp,
                  .read_attrs = ReadAttrs<TransposeAttrs>(Attr("perm", &TransposeAttrs::perm)),
                  .pure = true});

}  // namespace
}  // namespace internal

Blob Transpose(const Blob& x, TransposeAttrs attrs, std::string_view name) {
  return internal::AddOp1("transpose", {x}, std::move(attrs), name);
}

}  // namespace weir
