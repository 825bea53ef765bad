// argwhere: x (any shape of rank 1 to 12; f32, f64, f16, bf16, i32, i64, i8, u8, bool) -> indices
// (x.size, rank) and size (1), both of dtype `dtype` (i32 or i64): the coordinates of x's nonzero
// elements in row-major order in the first `size` rows of indices, zeros after (OneFlow's argwhere
// op, whose output is as large as it can be and whose size output says how much is meant; its
// Python flow.argwhere then cuts the rows with sync_dynamic_resize). No gradient (positions, not
// values); whole tensors on one device.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/functors/argwhere.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

struct ArgwhereAttrs {
  DType dtype = DType::kI32;
};

std::vector<TensorMeta> InferArgwhere(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const DType dtype = ctx.Get<ArgwhereAttrs>().dtype;
  if (x.dtype == DType::kTensorBuffer) throw OpError(ctx.op_type, "x must hold numbers, got {}", x.ToString());
  const int rank = x.shape.Rank();
  if (rank < 1 || rank > ArgwhereShape::kMaxRank) {
    throw OpError(ctx.op_type, "x must have 1 to {} axes, got {}", ArgwhereShape::kMaxRank, x.shape);
  }
  if (dtype != DType::kI32 && dtype != DType::kI64) throw OpError(ctx.op_type, "dtype must be i32 or i64, got {}", dtype);
  if (dtype == DType::kI32 && x.shape.NumElements() > std::int64_t{1} << 31) {
    throw OpError(ctx.op_type, "i32 indices number at most 2^31 elements, got {}; use dtype i64", x.shape);
  }
  return {{Shape{x.shape.NumElements(), rank}, dtype}, {Shape{1}, dtype}};
}

// Zeros are common ({0, 1, 2} draws, two classes): ranks 1 to 3, an empty x, a chunk and more of the
// CUDA kernel's.
std::vector<OpExample> ArgwhereExamples() {
  std::vector<OpExample> examples;
  for (DType dtype : {DType::kI32, DType::kI64}) {
    for (const Shape& shape : {Shape{0}, Shape{1}, Shape{10}, Shape{30, 4}, Shape{8, 40, 7}, Shape{3, 0, 2}}) {
      examples.push_back({.attrs = ArgwhereAttrs{dtype}, .inputs = {{shape, DType::kF32}}, .ties = true});
    }
    for (DType x : {DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kI8, DType::kU8, DType::kBool}) {
      examples.push_back({.attrs = ArgwhereAttrs{dtype}, .inputs = {{Shape{17, 33}, x}}, .classes = 2, .ties = true});
    }
  }
  return examples;
}

WEIR_REGISTER_OP({.type = "argwhere",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferArgwhere,
                  .read_attrs = ReadAttrs<ArgwhereAttrs>(Attr("dtype", &ArgwhereAttrs::dtype)),
                  .examples = ArgwhereExamples});

}  // namespace
}  // namespace internal

std::vector<Blob> Argwhere(const Blob& x, DType dtype, std::string_view name) {
  return internal::AddOp("argwhere", {x}, internal::ArgwhereAttrs{dtype}, name);
}

}  // namespace weir
