// distributed_partial_fc_sample: weight (C, D) float and label (B) i32/i64 -> mapped_label (B),
// sampled_label (num_sample) (both label's dtype) and sampled_weight (num_sample, D): OneFlow's
// partial-FC sampling for a classifier over many classes (InsightFace's): the classes fall into
// `parts` equal parts (the devices of the placement, in OneFlow), each part draws num_sample / parts
// of its classes, its positive classes (those the labels name) first, ascending, then random others
// (kernels/functors/partial_fc.hpp); sampled_label lists them part after part, mapped_label gives each
// label's place in that list, sampled_weight the rows of weight they pick. Split along the weight's
// rows, each device draws its own parts (mapped_label then a partial sum: each device places only its
// labels). The gradient adds the sampled rows' gradients back into weight's rows.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/partial_fc_attrs.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferPartialFcSample(const InferContext& ctx) {
  const TensorMeta& weight = ctx.inputs[0];
  const TensorMeta& label = ctx.inputs[1];
  const auto& attrs = ctx.Get<PartialFcSampleAttrs>();
  if (!IsFloating(weight.dtype) || weight.shape.Rank() != 2) {
    throw OpError(ctx.op_type, "weight must be a float matrix (classes, features), got {}", weight.ToString());
  }
  if ((label.dtype != DType::kI32 && label.dtype != DType::kI64) || label.shape.Rank() != 1) {
    throw OpError(ctx.op_type, "label must be an i32 or i64 vector, got {}", label.ToString());
  }
  const std::int64_t classes = weight.shape[0];
  if (attrs.num_classes != classes) {
    throw OpError(ctx.op_type, "num_classes {} is not the weight's {} rows", attrs.num_classes, classes);
  }
  if (attrs.parts < 1 || classes % attrs.parts != 0 || attrs.num_sample % attrs.parts != 0) {
    throw OpError(ctx.op_type, "the weight's {} classes and num_sample {} must both divide into {} parts", classes,
                  attrs.num_sample, attrs.parts);
  }
  if (attrs.num_sample < 1 || attrs.num_sample > classes) {
    throw OpError(ctx.op_type, "num_sample must be in [1, {}] (the classes), got {}", classes, attrs.num_sample);
  }
  return {label, {Shape{attrs.num_sample}, label.dtype}, {Shape{attrs.num_sample, weight.shape[1]}, weight.dtype}};
}

std::vector<SbpSignature> PartialFcSampleSbp(const SbpContext&) {
  return {{{Sbp::S(0), Sbp::B()}, {Sbp::P(), Sbp::S(0), Sbp::S(0)}}};
}

std::vector<Blob> PartialFcSampleGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[0] || !ctx.output_grads[2].Defined()) return {Blob(), Blob()};
  return {UnsortedSegmentSum(ctx.output_grads[2], ctx.outputs[1], ctx.Get<PartialFcSampleAttrs>().num_classes, 0), Blob()};
}

// Six parts (whole parts on 1, 2 and 3 devices) of four classes with two samples, or ten with five:
// the labels are too few to name more positive classes in a part than it has samples. Over 200
// weights: no finite-difference check, which each call's new draws would defeat.
std::vector<OpExample> PartialFcSampleExamples() {
  std::vector<OpExample> examples;
  for (DType weight : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (DType label : {DType::kI32, DType::kI64}) {
      examples.push_back({.attrs = PartialFcSampleAttrs{.num_sample = 12, .num_classes = 24, .parts = 6, .seed = 5},
                          .inputs = {{Shape{24, 9}, weight}, {Shape{2}, label}}, .classes = 24});
    }
  }
  examples.push_back({.attrs = PartialFcSampleAttrs{.num_sample = 30, .num_classes = 60, .parts = 6, .seed = 9},
                      .inputs = {{Shape{60, 4}, DType::kF32}, {Shape{3}, DType::kI32}}, .classes = 60});
  return examples;
}

WEIR_REGISTER_OP({.type = "distributed_partial_fc_sample",
                  .num_inputs = 2,
                  .input_names = {"weight", "label"},
                  .infer = InferPartialFcSample,
                  .gradient = PartialFcSampleGradient,
                  .sbp = PartialFcSampleSbp,
                  .read_attrs = ReadAttrs<PartialFcSampleAttrs>(
                      Attr("num_sample", &PartialFcSampleAttrs::num_sample), Attr("num_classes", &PartialFcSampleAttrs::num_classes),
                      Attr("parts", &PartialFcSampleAttrs::parts), Attr("seed", &PartialFcSampleAttrs::seed)),
                  .examples = PartialFcSampleExamples});

}  // namespace
}  // namespace weir::internal
