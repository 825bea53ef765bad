// unsorted_segment_sum: data whose axes from `axis` on start with the segment ids' shape, summed into
// num_segments segments by id (OneFlow's flow.math.unsorted_segment_sum; TensorFlow's): the output is
// data[:axis] + [num_segments] + data[axis + ids' rank:], zeros where no id points. An id outside
// [0, num_segments) fails the call. Its gradient is each entry's segment's: gather(dy, ids, axis).
#include <algorithm>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/gather_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferUnsortedSegmentSum(const InferContext& ctx) {
  const TensorMeta& data = ctx.inputs[0];
  const TensorMeta& ids = ctx.inputs[1];
  const auto& attrs = ctx.Get<UnsortedSegmentSumAttrs>();
  if (!IsNumber(data.dtype)) {
    throw OpError(ctx.op_type, "expects f32, f64, f16, bf16, i32 or i64 data, got {}", data.dtype);
  }
  if (ids.dtype != DType::kI32 && ids.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 segment_ids, got {}", ids.dtype);
  }
  if (attrs.num_segments < 0) throw OpError(ctx.op_type, "num_segments must be >= 0, got {}", attrs.num_segments);
  const int rank = data.shape.Rank();
  if (rank == 0) throw OpError(ctx.op_type, "data must have at least one axis, got a scalar");
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, rank);
  const std::vector<std::int64_t>& d = data.shape.Dims();
  const std::vector<std::int64_t>& i = ids.shape.Dims();
  if (axis + ids.shape.Rank() > rank || !std::equal(i.begin(), i.end(), d.begin() + axis)) {
    throw OpError(ctx.op_type, "data {} must have segment_ids' shape {} from axis {} on", data.shape, ids.shape, axis);
  }
  std::vector<std::int64_t> dims(d.begin(), d.begin() + axis);
  dims.push_back(attrs.num_segments);
  dims.insert(dims.end(), d.begin() + axis + ids.shape.Rank(), d.end());
  return {{Shape(std::move(dims)), data.dtype}};
}

std::vector<Blob> UnsortedSegmentSumGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[0]) return {Blob(), Blob()};
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<UnsortedSegmentSumAttrs>().axis, ctx.inputs[0].GetShape().Rank());
  return {Gather(ctx.output_grads[0], ctx.inputs[1], axis), Blob()};
}

// Data and ids split alike along the ids' axes: each device sums its entries, partial sums of the
// output. Data split along an axis before or after the ids', with whole ids: the output splits there.
std::vector<SbpSignature> UnsortedSegmentSumSbp(const SbpContext& ctx) {
  const int rank = ctx.inputs[0].shape.Rank();
  const int id_rank = ctx.inputs[1].shape.Rank();
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<UnsortedSegmentSumAttrs>().axis, rank);
  std::vector<SbpSignature> signatures;
  for (int k = 0; k < id_rank; ++k) signatures.push_back({{Sbp::S(axis + k), Sbp::S(k)}, {Sbp::P()}});
  for (int d = 0; d < rank; ++d) {
    if (d >= axis && d < axis + id_rank) continue;
    signatures.push_back({{Sbp::S(d), Sbp::B()}, {Sbp::S(d < axis ? d : d - id_rank + 1)}});
  }
  signatures.push_back({{Sbp::P(), Sbp::B()}, {Sbp::P()}});  // the sum is linear in data
  return signatures;
}

WEIR_REGISTER_OP({.type = "unsorted_segment_sum",
                  .num_inputs = 2,
                  .input_names = {"data", "segment_ids"},
                  .infer = InferUnsortedSegmentSum,
                  .gradient = UnsortedSegmentSumGradient,
                  .sbp = UnsortedSegmentSumSbp,
                  .read_attrs = ReadAttrs<UnsortedSegmentSumAttrs>(Attr("axis", &UnsortedSegmentSumAttrs::axis),
                                                                   Attr("num_segments", &UnsortedSegmentSumAttrs::num_segments))});

}  // namespace
}  // namespace internal

Blob UnsortedSegmentSum(const Blob& data, const Blob& segment_ids, std::int64_t num_segments, int axis,
                        std::string_view name) {
  return internal::AddOp1("unsorted_segment_sum", {data, segment_ids}, internal::UnsortedSegmentSumAttrs{axis, num_segments},
                          name);
}

}  // namespace weir
