// decode_random: each call, a fresh batch drawn from a distribution (OneFlow's
// flow.data.decode_random): synthetic data in place of a reader, for benchmarks and smoke tests.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/data/random_fill.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferDecodeRandom(const InferContext& ctx) {
  const auto& attrs = ctx.Get<DecodeRandomAttrs>();
  if (attrs.batch_size < 1) throw OpError(ctx.op_type, "batch_size must be >= 1, got {}", attrs.batch_size);
  for (std::int64_t d : attrs.shape.Dims()) {
    if (d < 0) throw OpError(ctx.op_type, "shape must have dims >= 0, got {}", attrs.shape);
  }
  try {
    Validate(DecodeRandomInitializer(attrs), attrs.dtype);
  } catch (const std::invalid_argument& e) {
    throw OpError(ctx.op_type, "{}", e.what());
  }
  std::vector<std::int64_t> dims{attrs.batch_size};
  for (std::int64_t d : attrs.shape.Dims()) dims.push_back(d);
  return {{Shape(std::move(dims)), attrs.dtype}};
}

WEIR_REGISTER_OP({.type = "decode_random", .num_inputs = 0, .infer = InferDecodeRandom, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<DecodeRandomAttrs>(
                      Attr("shape", &DecodeRandomAttrs::shape), Attr("dtype", &DecodeRandomAttrs::dtype),
                      Attr("batch_size", &DecodeRandomAttrs::batch_size),
                      Attr("distribution", &DecodeRandomAttrs::distribution), Attr("minval", &DecodeRandomAttrs::minval),
                      Attr("maxval", &DecodeRandomAttrs::maxval), Attr("mean", &DecodeRandomAttrs::mean),
                      Attr("stddev", &DecodeRandomAttrs::stddev), Attr("value", &DecodeRandomAttrs::value),
                      Attr("seed", &DecodeRandomAttrs::seed)),
                  .host_only = true, .per_device_source = true});

}  // namespace
}  // namespace internal

Blob DecodeRandom(JobBuilder& job, DecodeRandomAttrs attrs, std::string_view name) {
  return internal::AddSourceOp(job.Graph(), "decode_random", std::move(attrs), name).front();
}

}  // namespace weir
