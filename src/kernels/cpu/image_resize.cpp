// image_resize on the host: each image resized (bilinear or nearest), in parallel over the intra-op
// pool; to a dense batch of one size, or keeping each image's aspect ratio (items of its own).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/intra_op_pool.hpp"
#include "kernels/data/image.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

class ImageResizeCpu final : public Kernel {
 public:
  explicit ImageResizeCpu(const KernelSetup& setup)
      : attrs_(setup.Get<ImageResizeAttrs>()),
        op_name_(setup.op_name),
        interpolation_(image::ParseInterpolation(attrs_.interpolation_type, "[image_resize]")) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* images = inputs[0].As<TensorBufferItem>();
    const std::int64_t batch = inputs[0].NumElements();
    auto* scales = outputs.back().As<float>();
    if (!attrs_.keep_aspect_ratio) {
      const image::Size to{static_cast<int>(attrs_.target_height), static_cast<int>(attrs_.target_width)};
      const std::size_t per_image = static_cast<std::size_t>(to.height) * static_cast<std::size_t>(to.width) *
                                    static_cast<std::size_t>(attrs_.channels);
      ParallelFor(static_cast<int>(batch), [&](int i) {
        const image::Size from = SizeOf(images[i], i);
        if (outputs[0].GetDType() == DType::kU8) {
          image::Resize(images[i].data, from, static_cast<int>(attrs_.channels), outputs[0].As<std::uint8_t>() + i * per_image,
                        to, interpolation_);
        } else {
          image::Resize(images[i].data, from, static_cast<int>(attrs_.channels), outputs[0].As<float>() + i * per_image, to,
                        interpolation_);
        }
        scales[2 * i] = static_cast<float>(to.width) / static_cast<float>(from.width);
        scales[2 * i + 1] = static_cast<float>(to.height) / static_cast<float>(from.height);
      });
      return;
    }
    auto* items = outputs[0].As<TensorBufferItem>();
    auto* sizes = outputs[1].As<std::int32_t>();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(batch));
    ParallelFor(static_cast<int>(batch), [&](int i) {
      const image::Size from = SizeOf(images[i], i);
      const image::Size to = KeepingAspectRatio(from);
      std::vector<std::uint8_t>& pixels = buffers[static_cast<std::size_t>(i)];
      pixels.resize(static_cast<std::size_t>(to.height) * static_cast<std::size_t>(to.width) *
                    static_cast<std::size_t>(attrs_.channels));
      image::Resize(images[i].data, from, static_cast<int>(attrs_.channels), pixels.data(), to, interpolation_);
      const std::int32_t dims[] = {to.height, to.width, static_cast<std::int32_t>(attrs_.channels)};
      SetItem(items[i], pixels, dims);
      sizes[2 * i] = to.width;
      sizes[2 * i + 1] = to.height;
      scales[2 * i] = static_cast<float>(to.width) / static_cast<float>(from.width);
      scales[2 * i + 1] = static_cast<float>(to.height) / static_cast<float>(from.height);
    });
  }

 private:
  image::Size SizeOf(const TensorBufferItem& item, std::int64_t index) const {
    if (item.ndim != 3 || item.dtype != DType::kU8 || item.dims[2] != attrs_.channels || item.dims[0] < 1 || item.dims[1] < 1) {
      throw KernelError(fmt::format("[image_resize] op '{}': image {} of the batch is not a (height, width, {}) uint8 image",
                                    op_name_, index, attrs_.channels));
    }
    return {item.dims[0], item.dims[1]};
  }

  // The shorter (or longer) side to target_size, then the other side kept within max_size (or at
  // least min_size), as OneFlow's image_resize_keep_aspect_ratio does.
  image::Size KeepingAspectRatio(image::Size from) const {
    const double shorter = std::min(from.height, from.width);
    const double longer = std::max(from.height, from.width);
    double scale = static_cast<double>(attrs_.target_size) / (attrs_.resize_longer ? longer : shorter);
    if (!attrs_.resize_longer && attrs_.max_size > 0 && longer * scale > static_cast<double>(attrs_.max_size)) {
      scale = static_cast<double>(attrs_.max_size) / longer;
    }
    if (attrs_.resize_longer && attrs_.min_size > 0 && shorter * scale < static_cast<double>(attrs_.min_size)) {
      scale = static_cast<double>(attrs_.min_size) / shorter;
    }
    return {std::max(1, static_cast<int>(std::lround(from.height * scale))),
            std::max(1, static_cast<int>(std::lround(from.width * scale)))};
  }

  ImageResizeAttrs attrs_;
  std::string op_name_;
  image::Interpolation interpolation_;
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"image_resize", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<ImageResizeCpu>);
}

}  // namespace
}  // namespace weir::internal
