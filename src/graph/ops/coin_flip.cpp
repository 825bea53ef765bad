// coin_flip: each call, a batch of int8 coin flips, 1 with a probability (OneFlow's
// flow.random.CoinFlip, which crop_mirror_normalize reads to mirror images).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCoinFlip(const InferContext& ctx) {
  const auto& attrs = ctx.Get<CoinFlipAttrs>();
  if (attrs.batch_size < 1) throw OpError(ctx.op_type, "batch_size must be >= 1, got {}", attrs.batch_size);
  if (!(attrs.probability >= 0.0 && attrs.probability <= 1.0)) {
    throw OpError(ctx.op_type, "probability must be within [0, 1], got {}", attrs.probability);
  }
  return {{Shape{attrs.batch_size}, DType::kI8}};
}

WEIR_REGISTER_OP({.type = "coin_flip", .num_inputs = 0, .infer = InferCoinFlip, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<CoinFlipAttrs>(Attr("batch_size", &CoinFlipAttrs::batch_size),
                                                         Attr("probability", &CoinFlipAttrs::probability),
                                                         Attr("seed", &CoinFlipAttrs::seed)),
                  .host_only = true, .per_device_source = true});

}  // namespace
}  // namespace internal

Blob CoinFlip(JobBuilder& job, CoinFlipAttrs attrs, std::string_view name) {
  return internal::AddSourceOp(job.Graph(), "coin_flip", std::move(attrs), name).front();
}

}  // namespace weir
