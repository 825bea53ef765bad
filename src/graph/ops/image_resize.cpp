// image_resize: decoded images to one size (a dense batch) or keeping their aspect ratio (still a
// tensor_buffer), with each image's scale (OneFlow's flow.image.Resize).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/data_infer.hpp"
#include "kernels/data/image.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferImageResize(const InferContext& ctx) {
  CheckTensorBufferBatch(ctx, ctx.inputs[0], "images");
  const auto& attrs = ctx.Get<ImageResizeAttrs>();
  image::ParseInterpolation(attrs.interpolation_type, fmt::format("[{}]", ctx.op_type));
  if (attrs.channels != 1 && attrs.channels != 3) throw OpError(ctx.op_type, "channels must be 1 or 3, got {}", attrs.channels);
  const std::int64_t batch = ctx.inputs[0].shape[0];
  if (attrs.keep_aspect_ratio) {
    if (attrs.target_size < 1) throw OpError(ctx.op_type, "target_size must be >= 1, got {}", attrs.target_size);
    if (attrs.min_size < 0 || attrs.max_size < 0) {
      throw OpError(ctx.op_type, "min_size and max_size must be >= 0 (0: none), got {} and {}", attrs.min_size, attrs.max_size);
    }
    return {ctx.inputs[0], {Shape{batch, 2}, DType::kI32}, {Shape{batch, 2}, DType::kF32}};
  }
  if (attrs.target_width < 1 || attrs.target_height < 1) {
    throw OpError(ctx.op_type, "target_size must be (width, height) >= 1, got ({}, {})", attrs.target_width,
                  attrs.target_height);
  }
  if (attrs.dtype != DType::kU8 && attrs.dtype != DType::kF32) {
    throw OpError(ctx.op_type, "dtype must be uint8 or float32, got {}", attrs.dtype);
  }
  return {{Shape{batch, attrs.target_height, attrs.target_width, attrs.channels}, attrs.dtype}, {Shape{batch, 2}, DType::kF32}};
}

WEIR_REGISTER_OP({.type = "image_resize", .num_inputs = 1, .input_names = {"images"}, .infer = InferImageResize,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<ImageResizeAttrs>(
                      Attr("keep_aspect_ratio", &ImageResizeAttrs::keep_aspect_ratio),
                      Attr("target_width", &ImageResizeAttrs::target_width),
                      Attr("target_height", &ImageResizeAttrs::target_height),
                      Attr("target_size", &ImageResizeAttrs::target_size), Attr("min_size", &ImageResizeAttrs::min_size),
                      Attr("max_size", &ImageResizeAttrs::max_size), Attr("resize_longer", &ImageResizeAttrs::resize_longer),
                      Attr("channels", &ImageResizeAttrs::channels), Attr("dtype", &ImageResizeAttrs::dtype),
                      Attr("interpolation_type", &ImageResizeAttrs::interpolation_type)),
                  .host_only = true});

}  // namespace
}  // namespace internal

std::vector<Blob> ImageResize(const Blob& images, ImageResizeAttrs attrs, std::string_view name) {
  return internal::AddOp("image_resize", {images}, std::move(attrs), name);
}

}  // namespace weir
