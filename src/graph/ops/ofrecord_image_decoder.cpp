// ofrecord_image_decoder: the JPEG in one bytes feature of each record (or, with no feature named,
// each item itself: encoded bytes from ofrecord_bytes_decoder), decoded (optionally a random crop of
// it: Inception's random-area crop) to a tensor_buffer item of (height, width, channels) u8 (OneFlow's
// flow.data.OFRecordImageDecoder, OFRecordImageDecoderRandomCrop and ImageDecoderRandomCropResize).
#include <fmt/ranges.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/data_infer.hpp"
#include "kernels/data/image.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

void CheckRange(const InferContext& ctx, std::string_view what, const std::vector<double>& range, double floor,
                double ceiling) {
  if (range.size() != 2 || !(range[0] > floor) || !(range[0] <= range[1]) || !(range[1] <= ceiling)) {
    throw OpError(ctx.op_type, "{} must be [low, high] with {} < low <= high <= {}, got [{}]", what, floor, ceiling,
                  fmt::join(range, ", "));
  }
}

std::vector<TensorMeta> InferImageDecoder(const InferContext& ctx) {
  CheckTensorBufferBatch(ctx, ctx.inputs[0], "records");
  const auto& attrs = ctx.Get<OFRecordImageDecoderAttrs>();
  image::ParseColorSpace(attrs.color_space, fmt::format("[{}]", ctx.op_type));
  if (attrs.random_crop) {
    if (attrs.num_attempts < 1) throw OpError(ctx.op_type, "num_attempts must be >= 1, got {}", attrs.num_attempts);
    CheckRange(ctx, "random_area", attrs.random_area, 0.0, 1.0);
    CheckRange(ctx, "random_aspect_ratio", attrs.random_aspect_ratio, 0.0, 1e9);
  }
  return {ctx.inputs[0]};
}

WEIR_REGISTER_OP({.type = "ofrecord_image_decoder", .num_inputs = 1, .input_names = {"records"},
                  .infer = InferImageDecoder, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<OFRecordImageDecoderAttrs>(
                      Attr("feature", &OFRecordImageDecoderAttrs::name),
                      Attr("color_space", &OFRecordImageDecoderAttrs::color_space),
                      Attr("random_crop", &OFRecordImageDecoderAttrs::random_crop),
                      Attr("num_attempts", &OFRecordImageDecoderAttrs::num_attempts),
                      Attr("random_area", &OFRecordImageDecoderAttrs::random_area),
                      Attr("random_aspect_ratio", &OFRecordImageDecoderAttrs::random_aspect_ratio),
                      Attr("seed", &OFRecordImageDecoderAttrs::seed)),
                  .host_only = true});

}  // namespace
}  // namespace internal

Blob OFRecordImageDecoder(const Blob& records, OFRecordImageDecoderAttrs attrs, std::string_view name) {
  return internal::AddOp1("ofrecord_image_decoder", {records}, std::move(attrs), name);
}

}  // namespace weir
