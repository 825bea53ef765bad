// ofrecord_raw_decoder: one feature of each record as a fixed-shape tensor (OneFlow's
// flow.data.OFRecordRawDecoder).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/data_infer.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {

namespace {

std::vector<TensorMeta> InferRawDecoder(const InferContext& ctx) {
  CheckTensorBufferBatch(ctx, ctx.inputs[0], "records");
  const auto& attrs = ctx.Get<OFRecordRawDecoderAttrs>();
  if (attrs.name.empty()) throw OpError(ctx.op_type, "blob_name must name a feature of the records");
  switch (attrs.dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kI8: break;
    default: throw OpError(ctx.op_type, "dtype must be float32, float64, int32, int64, uint8 or int8, got {}", attrs.dtype);
  }
  if (attrs.dim1_varying_length) {
    throw OpError(ctx.op_type, "dim1_varying_length=True makes a shape that varies per call, and Weir's shapes are "
                  "static: declare the longest shape and pass auto_zero_padding=True");
  }
  for (std::int64_t d : attrs.shape.Dims()) {
    if (d < 0) throw OpError(ctx.op_type, "shape must have dims >= 0, got {}", attrs.shape);
  }
  std::vector<std::int64_t> dims{ctx.inputs[0].shape[0]};
  for (std::int64_t d : attrs.shape.Dims()) dims.push_back(d);
  return {{Shape(std::move(dims)), attrs.dtype}};
}

WEIR_REGISTER_OP({.type = "ofrecord_raw_decoder", .num_inputs = 1, .input_names = {"records"}, .infer = InferRawDecoder,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<OFRecordRawDecoderAttrs>(
                      Attr("feature", &OFRecordRawDecoderAttrs::name), Attr("shape", &OFRecordRawDecoderAttrs::shape),
                      Attr("dtype", &OFRecordRawDecoderAttrs::dtype),
                      Attr("dim1_varying_length", &OFRecordRawDecoderAttrs::dim1_varying_length),
                      Attr("auto_zero_padding", &OFRecordRawDecoderAttrs::auto_zero_padding)),
                  .host_only = true});

}  // namespace
}  // namespace internal

Blob OFRecordRawDecoder(const Blob& records, OFRecordRawDecoderAttrs attrs, std::string_view name) {
  return internal::AddOp1("ofrecord_raw_decoder", {records}, std::move(attrs), name);
}

}  // namespace weir
