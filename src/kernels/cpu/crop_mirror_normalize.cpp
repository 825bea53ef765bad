// crop_mirror_normalize on the host: for each image its window, read left to right or (mirrored)
// right to left, normalized per channel into NCHW or NHWC floats, in parallel over the images.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/intra_op_pool.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/half.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class CropMirrorNormalizeCpu final : public Kernel {
 public:
  explicit CropMirrorNormalizeCpu(const KernelSetup& setup)
      : attrs_(setup.Get<CropMirrorNormalizeAttrs>()), op_name_(setup.op_name), from_buffers_(setup.inputs[0].dtype == DType::kTensorBuffer) {
    const Shape& out = setup.outputs[0].shape;
    nchw_ = attrs_.output_layout == DataFormat::kNCHW;
    channels_ = static_cast<int>(nchw_ ? out[1] : out[3]);
    height_ = static_cast<int>(nchw_ ? out[2] : out[1]);
    width_ = static_cast<int>(nchw_ ? out[3] : out[2]);
    for (int c = 0; c < channels_; ++c) {
      const double mean = attrs_.mean.size() == 1 ? attrs_.mean[0] : attrs_.mean[static_cast<std::size_t>(c)];
      const double std = attrs_.std.size() == 1 ? attrs_.std[0] : attrs_.std[static_cast<std::size_t>(c)];
      scale_.push_back(static_cast<float>(1.0 / std));
      shift_.push_back(static_cast<float>(-mean / std));
    }
    if (!from_buffers_) {
      const Shape& in = setup.inputs[0].shape;
      dense_height_ = static_cast<int>(in[1]);
      dense_width_ = static_cast<int>(in[2]);
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const std::int64_t batch = inputs[0].GetShape()[0];
    const std::int8_t* mirror = inputs.size() > 1 ? inputs[1].As<std::int8_t>() : nullptr;
    T* out = outputs[0].As<T>();
    const std::size_t per_image = static_cast<std::size_t>(channels_) * static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_);
    ParallelFor(static_cast<int>(batch), [&](int i) {
      const std::uint8_t* pixels = nullptr;
      int height = dense_height_, width = dense_width_;
      if (from_buffers_) {
        const TensorBufferItem& item = inputs[0].As<TensorBufferItem>()[i];
        if (item.ndim != 3 || item.dtype != DType::kU8 || item.dims[2] != channels_) {
          throw KernelError(fmt::format("[crop_mirror_normalize] op '{}': image {} of the batch is not a (height, width, {}) "
                                        "uint8 image", op_name_, i, channels_));
        }
        pixels = item.data;
        height = item.dims[0];
        width = item.dims[1];
      } else {
        pixels = inputs[0].As<std::uint8_t>() + static_cast<std::size_t>(i) * static_cast<std::size_t>(height) *
                                                    static_cast<std::size_t>(width) * static_cast<std::size_t>(channels_);
      }
      if (height < height_ || width < width_) {
        throw KernelError(fmt::format("[crop_mirror_normalize] op '{}': image {} of the batch is {}x{}, smaller than the "
                                      "crop {}x{}", op_name_, i, height, width, height_, width_));
      }
      // OneFlow's placement: crop_x = crop_pos_x * (width - crop_w), truncated.
      const int x0 = static_cast<int>(attrs_.crop_pos_x * (width - width_));
      const int y0 = static_cast<int>(attrs_.crop_pos_y * (height - height_));
      const bool flip = mirror != nullptr && mirror[i] != 0;
      T* image = out + static_cast<std::size_t>(i) * per_image;
      for (int y = 0; y < height_; ++y) {
        const std::uint8_t* row = pixels + (static_cast<std::size_t>(y0 + y) * static_cast<std::size_t>(width) +
                                            static_cast<std::size_t>(x0)) * static_cast<std::size_t>(channels_);
        for (int x = 0; x < width_; ++x) {
          const std::uint8_t* pixel = row + static_cast<std::size_t>(flip ? width_ - 1 - x : x) * static_cast<std::size_t>(channels_);
          for (int c = 0; c < channels_; ++c) {
            const float value = pixel[c] * scale_[static_cast<std::size_t>(c)] + shift_[static_cast<std::size_t>(c)];
            const std::size_t at = nchw_ ? (static_cast<std::size_t>(c) * height_ + y) * width_ + x
                                         : (static_cast<std::size_t>(y) * width_ + x) * channels_ + c;
            image[at] = static_cast<T>(value);
          }
        }
      }
    });
  }

 private:
  CropMirrorNormalizeAttrs attrs_;
  std::string op_name_;
  bool from_buffers_;
  bool nchw_ = true;
  int channels_ = 3, height_ = 0, width_ = 0;
  int dense_height_ = 0, dense_width_ = 0;
  std::vector<float> scale_, shift_;
};

std::unique_ptr<Kernel> MakeCropMirrorNormalize(const KernelSetup& setup) {
  if (setup.outputs[0].dtype == DType::kF16) return std::make_unique<CropMirrorNormalizeCpu<float16>>(setup);
  return std::make_unique<CropMirrorNormalizeCpu<float>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"crop_mirror_normalize", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeCropMirrorNormalize);
  RegisterKernel({"crop_mirror_normalize", Device::Kind::kCpu, DType::kU8}, &MakeCropMirrorNormalize);
}

}  // namespace
}  // namespace weir::internal
