// ofrecord_bytes_decoder: the bytes of one feature of each record, a tensor_buffer item each
// (OneFlow's flow.data.OFRecordBytesDecoder).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/data_infer.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBytesDecoder(const InferContext& ctx) {
  CheckTensorBufferBatch(ctx, ctx.inputs[0], "records");
  if (ctx.Get<OFRecordBytesDecoderAttrs>().name.empty()) throw OpError(ctx.op_type, "blob_name must name a feature of the records");
  return {ctx.inputs[0]};
}

WEIR_REGISTER_OP({.type = "ofrecord_bytes_decoder", .num_inputs = 1, .input_names = {"records"},
                  .infer = InferBytesDecoder, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<OFRecordBytesDecoderAttrs>(Attr("feature", &OFRecordBytesDecoderAttrs::name)),
                  .host_only = true});

}  // namespace
}  // namespace internal

Blob OFRecordBytesDecoder(const Blob& records, OFRecordBytesDecoderAttrs attrs, std::string_view name) {
  return internal::AddOp1("ofrecord_bytes_decoder", {records}, std::move(attrs), name);
}

}  // namespace weir
