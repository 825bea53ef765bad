// slice: x[start:stop:step] along every axis, with Python's rules (OneFlow's slice_v2). Its gradient
// puts dy back where the slice took it from, zeros elsewhere (slice_grad).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/slice_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferSlice(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const auto& attrs = ctx.Get<SliceAttrs>();
  std::string why;
  const std::optional<std::vector<SliceAxis>> axes = ResolveSlice(x.shape, attrs, why);
  if (!axes) {
    throw OpError(ctx.op_type, "{}: x is {}, got start [{}], stop [{}], step [{}]", why, x.shape, fmt::join(attrs.start, ","),
                  fmt::join(attrs.stop, ","), fmt::join(attrs.step, ","));
  }
  return {{SliceShape(*axes), x.dtype}};
}

std::vector<Blob> SliceGradient(const GradContext& ctx) {
  return {AddOp1("slice_grad", {ctx.output_grads[0]}, SliceGradAttrs{ctx.Get<SliceAttrs>(), ctx.inputs[0].GetShape()}, {})};
}

// An axis the slice takes whole may stay split; the slice is linear, so partial sums stay partial.
std::vector<SbpSignature> SliceSbp(const SbpContext& ctx) {
  std::string why;
  const std::optional<std::vector<SliceAxis>> axes = ResolveSlice(ctx.inputs[0].shape, ctx.Get<SliceAttrs>(), why);
  std::vector<SbpSignature> signatures;
  for (std::size_t i = 0; axes && i < axes->size(); ++i) {
    const SliceAxis& axis = (*axes)[i];
    if (axis.start == 0 && axis.step == 1 && axis.length == ctx.inputs[0].shape[static_cast<int>(i)]) {
      signatures.push_back({{Sbp::S(static_cast<int>(i))}, {Sbp::S(static_cast<int>(i))}});
    }
  }
  signatures.push_back({{Sbp::P()}, {Sbp::P()}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "slice",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferSlice,
                  .gradient = SliceGradient,
                  .sbp = SliceSbp,
                  .read_attrs = ReadAttrs<SliceAttrs>(Attr("start", &SliceAttrs::start), Attr("stop", &SliceAttrs::stop),
                                                      Attr("step", &SliceAttrs::step))});

}  // namespace
}  // namespace internal

Blob Slice(const Blob& x, SliceAttrs attrs, std::string_view name) {
  return internal::AddOp1("slice", {x}, std::move(attrs), name);
}

}  // namespace weir
