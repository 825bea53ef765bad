// unique_with_counts: x (N) -> y (N), the distinct values of x ascending and zeros after them; idx
// (N), each element's value's position in y (y[idx[i]] == x[i]); count (N), each value's
// occurrences and zeros after; num_unique (1), how many values (OneFlow's
// flow.experimental.unique_with_counts, whose outputs have x's length and num_unique says how much is
// meant; its order of values is unspecified, Weir's ascending: kernels/functors/unique.hpp). The
// indices are out_idx's dtype, i32 or i64. No gradient (values chosen, not computed), whole tensors
// on one device.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

struct UniqueWithCountsAttrs {
  DType out_idx = DType::kI32;
};

std::vector<TensorMeta> InferUniqueWithCounts(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const DType out_idx = ctx.Get<UniqueWithCountsAttrs>().out_idx;
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64 && x.dtype != DType::kI32 && x.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects an f32, f64, i32 or i64 x, got {}", x.dtype);
  }
  if (x.shape.Rank() != 1) throw OpError(ctx.op_type, "x must be one-dimensional, got {}", x.shape);
  if (out_idx != DType::kI32 && out_idx != DType::kI64) throw OpError(ctx.op_type, "out_idx must be i32 or i64, got {}", out_idx);
  if (out_idx == DType::kI32 && x.shape[0] > std::int64_t{1} << 31) {
    throw OpError(ctx.op_type, "i32 indices number at most 2^31 elements, got {}; use out_idx i64", x.shape);
  }
  return {x, {x.shape, out_idx}, {x.shape, out_idx}, {Shape{1}, out_idx}};
}

// Duplicates make the values worth counting: integers among a few classes, floats among {0, 1, 2};
// empty, one-element and more-than-a-block lengths; both index dtypes.
std::vector<OpExample> UniqueExamples() {
  std::vector<OpExample> examples;
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    for (DType out_idx : {DType::kI32, DType::kI64}) {
      for (std::int64_t n : {0, 1, 17, 300}) {
        examples.push_back({.attrs = UniqueWithCountsAttrs{out_idx}, .inputs = {{Shape{n}, dtype}}, .classes = 7, .ties = true});
      }
    }
  }
  return examples;
}

WEIR_REGISTER_OP({.type = "unique_with_counts",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferUniqueWithCounts,
                  .read_attrs = ReadAttrs<UniqueWithCountsAttrs>(Attr("out_idx", &UniqueWithCountsAttrs::out_idx)),
                  .examples = UniqueExamples});

}  // namespace
}  // namespace internal

std::vector<Blob> UniqueWithCounts(const Blob& x, DType out_idx, std::string_view name) {
  return internal::AddOp("unique_with_counts", {x}, internal::UniqueWithCountsAttrs{out_idx}, name);
}

}  // namespace weir
