// ofrecord_image_decoder on the host: the batch's JPEGs and PNGs decoded in parallel over the intra-op
// pool (libjpeg-turbo, libpng), each into this kernel's own item buffer; with random_crop, a random window of
// each, drawn from (seed, device share, call, image) so that a run repeats whatever the threads do.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/intra_op_pool.hpp"
#include "kernels/data/image.hpp"
#include "kernels/data/ofrecord.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

std::uint64_t Mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class OFRecordImageDecoderCpu final : public Kernel {
 public:
  explicit OFRecordImageDecoderCpu(const KernelSetup& setup)
      : attrs_(setup.Get<OFRecordImageDecoderAttrs>()),
        op_name_(setup.op_name),
        color_space_(image::ParseColorSpace(attrs_.color_space, "[ofrecord_image_decoder]")),
        stream_(Mix(attrs_.seed ^ Mix(static_cast<std::uint64_t>(setup.shard)))) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* records = inputs[0].As<TensorBufferItem>();
    auto* items = outputs[0].As<TensorBufferItem>();
    const std::int64_t batch = inputs[0].NumElements();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(batch));
    const std::uint64_t call = call_++;
    const int channels = image::Channels(color_space_);
    ParallelFor(static_cast<int>(batch), [&](int i) {
      std::vector<std::uint8_t>& pixels = buffers[static_cast<std::size_t>(i)];
      const std::span<const std::uint8_t> encoded =
          attrs_.name.empty() ? records[i].Bytes()
                              : ofrecord::FirstBytes(records[i].Bytes(), attrs_.name, i, "ofrecord_image_decoder", op_name_);
      image::Size size;
      try {
        if (!attrs_.random_crop) {
          size = image::DecodeImage(encoded, color_space_, pixels);
        } else {
          thread_local std::vector<std::uint8_t> whole;
          const image::Size full = image::DecodeImage(encoded, color_space_, whole);
          std::mt19937_64 rng(Mix(stream_ ^ Mix(call * 0x100000001b3ULL + static_cast<std::uint64_t>(i))));
          const image::Window window = image::RandomWindow(full, attrs_.random_area, attrs_.random_aspect_ratio,
                                                           static_cast<int>(attrs_.num_attempts), rng);
          image::Crop(whole.data(), full, channels, window, pixels);
          size = {window.height, window.width};
        }
      } catch (const image::ImageError& e) {
        throw KernelError(fmt::format("[ofrecord_image_decoder] op '{}': image {} of the batch{}: {}", op_name_, i,
                                      attrs_.name.empty() ? "" : fmt::format(" (feature '{}')", attrs_.name), e.what()));
      }
      const std::int32_t dims[] = {size.height, size.width, channels};
      SetItem(items[i], pixels, dims);
    });
  }

 private:
  OFRecordImageDecoderAttrs attrs_;
  std::string op_name_;
  image::ColorSpace color_space_;
  std::uint64_t stream_;
  std::uint64_t call_ = 0;
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ofrecord_image_decoder", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<OFRecordImageDecoderCpu>);
}

}  // namespace
}  // namespace weir::internal
