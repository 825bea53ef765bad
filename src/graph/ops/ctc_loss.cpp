// ctc_loss: the connectionist temporal classification loss of each example (OneFlow's and PyTorch's
// flow.ctc_loss, before the reduction, which the Python wrapper adds): log_probs (T, N, C) float,
// targets (N, S), input_lengths (N), target_lengths (N) of one integer dtype -> loss (N) and the
// forward and backward variables (N, T, 2S + 1) its gradient reads (kernels/functors/ctc.hpp). A
// length or target out of range fails the call. Its gradient in log_probs is the loss's derivative
// (PyTorch's and OneFlow's kernels add exp(log_probs) to it, which the log_softmax that makes
// log_probs cancels).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/functors/ctc.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

void CheckCtcInputs(const InferContext& ctx, const TensorMeta& log_probs, const TensorMeta& targets,
                    const TensorMeta& input_lengths, const TensorMeta& target_lengths) {
  if (log_probs.dtype != DType::kF32 && log_probs.dtype != DType::kF64) {
    throw OpError(ctx.op_type, "expects f32 or f64 log_probs, got {}", log_probs.dtype);
  }
  if (targets.dtype != DType::kI32 && targets.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 targets, got {}", targets.dtype);
  }
  if (input_lengths.dtype != targets.dtype || target_lengths.dtype != targets.dtype) {
    throw OpError(ctx.op_type, "input_lengths ({}) and target_lengths ({}) must have the targets' dtype {}",
                  input_lengths.dtype, target_lengths.dtype, targets.dtype);
  }
  if (log_probs.shape.Rank() != 3 || targets.shape.Rank() != 2 || targets.shape[0] != log_probs.shape[1] ||
      input_lengths.shape != Shape{log_probs.shape[1]} || target_lengths.shape != Shape{log_probs.shape[1]}) {
    throw OpError(ctx.op_type,
                  "expects log_probs (T, N, C), targets (N, S), input_lengths (N) and target_lengths (N), got {}, {}, "
                  "{} and {}",
                  log_probs.shape, targets.shape, input_lengths.shape, target_lengths.shape);
  }
  const std::int64_t blank = ctx.Get<CtcLossAttrs>().blank;
  if (blank < 0 || blank >= log_probs.shape[2]) {
    throw OpError(ctx.op_type, "blank must be a class in [0, {}), got {}", log_probs.shape[2], blank);
  }
}

std::vector<TensorMeta> InferCtcLoss(const InferContext& ctx) {
  const TensorMeta& log_probs = ctx.inputs[0];
  CheckCtcInputs(ctx, log_probs, ctx.inputs[1], ctx.inputs[2], ctx.inputs[3]);
  const Shape variables{log_probs.shape[1], log_probs.shape[0], 2 * ctx.inputs[1].shape[1] + 1};
  return {{Shape{log_probs.shape[1]}, log_probs.dtype}, {variables, log_probs.dtype}, {variables, log_probs.dtype}};
}

// (dloss, log_probs, targets, input_lengths, target_lengths, alpha, beta) -> dlog_probs.
std::vector<TensorMeta> InferCtcLossGrad(const InferContext& ctx) {
  const TensorMeta& log_probs = ctx.inputs[1];
  CheckCtcInputs(ctx, log_probs, ctx.inputs[2], ctx.inputs[3], ctx.inputs[4]);
  const Shape variables{log_probs.shape[1], log_probs.shape[0], 2 * ctx.inputs[2].shape[1] + 1};
  if (ctx.inputs[0].shape != Shape{log_probs.shape[1]} || ctx.inputs[5].shape != variables ||
      ctx.inputs[6].shape != variables) {
    throw OpError(ctx.op_type, "expects dloss (N) and alpha and beta {}, got {}, {} and {}", variables,
                  ctx.inputs[0].shape, ctx.inputs[5].shape, ctx.inputs[6].shape);
  }
  return {log_probs};
}

std::vector<Blob> CtcLossGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[0] || !ctx.output_grads[0].Defined()) return {Blob(), Blob(), Blob(), Blob()};
  const Blob dlog_probs = AddOp1("ctc_loss_grad",
                                 {ctx.output_grads[0], ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.inputs[3],
                                  ctx.outputs[1], ctx.outputs[2]},
                                 ctx.Get<CtcLossAttrs>(), {});
  return {dlog_probs, Blob(), Blob(), Blob()};
}

// The examples split: log_probs along its batch axis 1, the rest along their first.
std::vector<SbpSignature> CtcLossSbp(const SbpContext&) {
  return {{{Sbp::S(1), Sbp::S(0), Sbp::S(0), Sbp::S(0)}, {Sbp::S(0), Sbp::S(0), Sbp::S(0)}}};
}
std::vector<SbpSignature> CtcLossGradSbp(const SbpContext&) {
  return {{{Sbp::S(0), Sbp::S(1), Sbp::S(0), Sbp::S(0), Sbp::S(0), Sbp::S(0), Sbp::S(0)}, {Sbp::S(1)}}};
}

// Log probabilities of 6 steps, 3 examples, 4 classes, targets of up to 3 labels (every integer
// drawn in [0, 4): lengths past what fits give an infinite loss, so the f64 examples zero those);
// and a longer f32 batch.
std::vector<OpExample> CtcExamples(bool grad) {
  std::vector<OpExample> examples;
  const auto add = [&](const Shape& log_probs, std::int64_t longest, DType dtype, DType index, CtcLossAttrs attrs) {
    const std::int64_t batch = log_probs[1];
    const Shape variables{batch, log_probs[0], 2 * longest + 1};
    std::vector<TensorMeta> inputs{{log_probs, dtype}, {Shape{batch, longest}, index}, {Shape{batch}, index}, {Shape{batch}, index}};
    if (grad) {
      inputs.insert(inputs.begin(), TensorMeta{Shape{batch}, dtype});
      inputs.insert(inputs.end(), {TensorMeta{variables, dtype}, TensorMeta{variables, dtype}});
    }
    examples.push_back({.attrs = attrs, .inputs = inputs, .low = -3.0, .high = -0.1, .classes = 4});
  };
  add(Shape{6, 3, 4}, 3, DType::kF64, DType::kI32, {.blank = 0, .zero_infinity = true});
  add(Shape{6, 3, 4}, 3, DType::kF64, DType::kI64, {.blank = 3, .zero_infinity = true});
  add(Shape{6, 3, 4}, 3, DType::kF32, DType::kI64, {.blank = 1, .zero_infinity = false});
  add(Shape{40, 7, 5}, 3, DType::kF32, DType::kI32, {.blank = 0, .zero_infinity = true});
  return examples;
}

const auto kReadCtcAttrs = ReadAttrs<CtcLossAttrs>(Attr("blank", &CtcLossAttrs::blank),
                                                   Attr("zero_infinity", &CtcLossAttrs::zero_infinity));

WEIR_REGISTER_OP({.type = "ctc_loss",
                  .num_inputs = 4,
                  .input_names = {"log_probs", "targets", "input_lengths", "target_lengths"},
                  .infer = InferCtcLoss,
                  .gradient = CtcLossGradient,
                  .sbp = CtcLossSbp,
                  .read_attrs = kReadCtcAttrs,
                  .examples = [] { return CtcExamples(false); }});

WEIR_REGISTER_OP({.type = "ctc_loss_grad",
                  .num_inputs = 7,
                  .input_names = {"dloss", "log_probs", "targets", "input_lengths", "target_lengths", "alpha", "beta"},
                  .infer = InferCtcLossGrad,
                  .sbp = CtcLossGradSbp,
                  .read_attrs = kReadCtcAttrs,
                  .examples = [] { return CtcExamples(true); }});

}  // namespace
}  // namespace internal

Blob CtcLoss(const Blob& log_probs, const Blob& targets, const Blob& input_lengths, const Blob& target_lengths,
             std::int64_t blank, bool zero_infinity, std::string_view name) {
  return internal::AddOp("ctc_loss", {log_probs, targets, input_lengths, target_lengths},
                         internal::CtcLossAttrs{blank, zero_infinity}, name)[0];
}

}  // namespace weir
