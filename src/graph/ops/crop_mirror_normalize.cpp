// crop_mirror_normalize: a window of each image, flipped left-right where asked, normalized per
// channel, as floats in NCHW or NHWC (OneFlow's flow.image.CropMirrorNormalize).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/data_infer.hpp"
#include "kernels/data/image.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCropMirrorNormalize(const InferContext& ctx) {
  const auto& attrs = ctx.Get<CropMirrorNormalizeAttrs>();
  const TensorMeta& images = ctx.inputs[0];
  const std::int64_t channels = image::Channels(image::ParseColorSpace(attrs.color_space, fmt::format("[{}]", ctx.op_type)));
  std::int64_t height = attrs.crop_h, width = attrs.crop_w;
  if (attrs.crop_h < 0 || attrs.crop_w < 0) throw OpError(ctx.op_type, "crop_h and crop_w must be >= 0, got {} and {}", attrs.crop_h, attrs.crop_w);
  if ((attrs.crop_h == 0) != (attrs.crop_w == 0)) {
    throw OpError(ctx.op_type, "crop_h and crop_w are both 0 (no crop) or both set, got {} and {}", attrs.crop_h, attrs.crop_w);
  }
  if (images.dtype == DType::kTensorBuffer) {
    CheckTensorBufferBatch(ctx, images, "images");
    if (attrs.crop_h == 0) {
      throw OpError(ctx.op_type, "images of a tensor_buffer differ in size: give crop_h and crop_w (or resize them to "
                    "one size first with flow.image.Resize)");
    }
  } else if (images.dtype == DType::kU8 && images.shape.Rank() == 4) {
    if (images.shape[3] != channels) {
      throw OpError(ctx.op_type, "images {} have {} channels, color_space '{}' has {}", images.ToString(), images.shape[3],
                    attrs.color_space, channels);
    }
    if (attrs.crop_h == 0) {
      height = images.shape[1];
      width = images.shape[2];
    } else if (attrs.crop_h > images.shape[1] || attrs.crop_w > images.shape[2]) {
      throw OpError(ctx.op_type, "crop {}x{} is larger than the images {}", attrs.crop_h, attrs.crop_w, images.ToString());
    }
  } else {
    throw OpError(ctx.op_type, "images must be a tensor_buffer of images or a (batch, height, width, channels) uint8 "
                  "tensor, got {}", images.ToString());
  }
  if (!(attrs.crop_pos_x >= 0.0 && attrs.crop_pos_x <= 1.0 && attrs.crop_pos_y >= 0.0 && attrs.crop_pos_y <= 1.0)) {
    throw OpError(ctx.op_type, "crop_pos_x and crop_pos_y must be within [0, 1], got {} and {}", attrs.crop_pos_x, attrs.crop_pos_y);
  }
  for (const auto* values : {&attrs.mean, &attrs.std}) {
    if (values->size() != 1 && static_cast<std::int64_t>(values->size()) != channels) {
      throw OpError(ctx.op_type, "{} must have 1 or {} values (one per channel), got {}", values == &attrs.mean ? "mean" : "std",
                    channels, values->size());
    }
  }
  for (double s : attrs.std) {
    if (s == 0.0) throw OpError(ctx.op_type, "std must not be 0");
  }
  if (attrs.output_dtype != DType::kF32 && attrs.output_dtype != DType::kF16) {
    throw OpError(ctx.op_type, "output_dtype must be float32 or float16, got {}", attrs.output_dtype);
  }
  const std::int64_t batch = images.shape[0];
  if (ctx.inputs.size() == 2) {
    const TensorMeta& mirror = ctx.inputs[1];
    if (mirror.dtype != DType::kI8 || mirror.shape != Shape{batch}) {
      throw OpError(ctx.op_type, "mirror_blob must be int8 of shape ({},) (flow.random.CoinFlip), got {}", batch, mirror.ToString());
    }
  } else if (ctx.inputs.size() != 1) {
    throw OpError(ctx.op_type, "takes images and an optional mirror_blob, got {} inputs", ctx.inputs.size());
  }
  const Shape out = attrs.output_layout == DataFormat::kNCHW ? Shape{batch, channels, height, width}
                                                             : Shape{batch, height, width, channels};
  return {{out, attrs.output_dtype}};
}

WEIR_REGISTER_OP({.type = "crop_mirror_normalize", .num_inputs = -1, .input_names = {"images", "mirror_blob"},
                  .infer = InferCropMirrorNormalize, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<CropMirrorNormalizeAttrs>(
                      Attr("color_space", &CropMirrorNormalizeAttrs::color_space),
                      Attr("output_layout", &CropMirrorNormalizeAttrs::output_layout),
                      Attr("crop_h", &CropMirrorNormalizeAttrs::crop_h), Attr("crop_w", &CropMirrorNormalizeAttrs::crop_w),
                      Attr("crop_pos_y", &CropMirrorNormalizeAttrs::crop_pos_y),
                      Attr("crop_pos_x", &CropMirrorNormalizeAttrs::crop_pos_x), Attr("mean", &CropMirrorNormalizeAttrs::mean),
                      Attr("std", &CropMirrorNormalizeAttrs::std),
                      Attr("output_dtype", &CropMirrorNormalizeAttrs::output_dtype)),
                  .host_only = true});

}  // namespace
}  // namespace internal

Blob CropMirrorNormalize(const Blob& images, const Blob& mirror, CropMirrorNormalizeAttrs attrs, std::string_view name) {
  std::vector<Blob> inputs{images};
  if (mirror.Defined()) inputs.push_back(mirror);
  return internal::AddOp1("crop_mirror_normalize", inputs, std::move(attrs), name);
}

}  // namespace weir
