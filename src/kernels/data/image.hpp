#pragma once
// Images for the data pipeline: JPEG decoding and encoding (libjpeg-turbo's TurboJPEG API), PNG
// decoding and encoding (libpng's simplified API), the
// random-area crop window of Inception-style training, and resizing. Pixels are 8-bit, rows of
// (height, width, channels), channels in the image's color space's order.
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace weir::internal::image {

/// An image that cannot be decoded (or bytes that are no JPEG or PNG); the message says why.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ColorSpace : std::uint8_t { kRGB, kBGR, kGray };
/// "RGB", "BGR" or "GRAY" (any case); throws std::invalid_argument naming `what` otherwise.
ColorSpace ParseColorSpace(std::string_view name, std::string_view what);
int Channels(ColorSpace color_space);

struct Size {
  int height = 0;
  int width = 0;
};

/// The size of the JPEG in `bytes`; throws ImageError.
Size JpegSize(std::span<const std::uint8_t> bytes);
/// Decodes the JPEG in `bytes` into `pixels` (resized to height * width * Channels); throws ImageError.
Size DecodeJpeg(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels);
/// A JPEG of `pixels` (height, width, channels: 1 gray, 3 RGB) at `quality` (1..100).
std::vector<std::uint8_t> EncodeJpeg(const std::uint8_t* pixels, Size size, int channels, int quality);
/// Decodes the PNG in `bytes` (any bit depth, palette or color type; libpng's simplified API, 8-bit
/// sRGB out) into `pixels` as DecodeJpeg does; an alpha channel is dropped, not composited (as OpenCV,
/// which OneFlow decodes with, drops it), and gray is the BT.601 luma. Throws ImageError.
Size DecodePng(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels);
/// A lossless PNG of `pixels` (height, width, channels: 1 gray, 3 RGB, 4 RGBA).
std::vector<std::uint8_t> EncodePng(const std::uint8_t* pixels, Size size, int channels);
/// DecodeJpeg or DecodePng, by the bytes' signature; throws ImageError for anything else.
Size DecodeImage(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels);

/// A crop: its top-left corner and size, inside the image.
struct Window {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};
/// Inception's random crop (OneFlow's and torchvision's): up to `attempts` draws of an area fraction
/// in `area` and a log-uniform aspect ratio (width / height) in `aspect_ratio`, the first that fits
/// placed uniformly; else the largest centred crop whose ratio is within the range.
Window RandomWindow(Size image, std::span<const double> area, std::span<const double> aspect_ratio, int attempts,
                    std::mt19937_64& rng);
/// Copies `window` of an image of `size` and `channels` into `out`.
void Crop(const std::uint8_t* pixels, Size size, int channels, Window window, std::vector<std::uint8_t>& out);

enum class Interpolation : std::uint8_t { kBilinear, kNearest, kBicubic, kArea };
/// "auto" and "bilinear" (bilinear), "nearest_neighbor", "bicubic", "area" (OneFlow's names); throws
/// std::invalid_argument naming `what` otherwise.
Interpolation ParseInterpolation(std::string_view name, std::string_view what);
/// Resizes `src` (of `from`) to `to` with half-pixel centres, as OpenCV's resize (which OneFlow's
/// image_resize runs) does: bicubic is OpenCV's (Keys' kernel with a = -0.75, edge pixels repeated),
/// area weighs each source pixel by how much of it the output pixel covers. Writes T (u8 rounded and
/// saturated, or float).
template <typename T>
void Resize(const std::uint8_t* src, Size from, int channels, T* dst, Size to, Interpolation interpolation);

}  // namespace weir::internal::image
