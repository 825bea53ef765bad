#include "kernels/data/image.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <png.h>
#include <turbojpeg.h>

namespace weir::internal::image {

namespace {

// One TurboJPEG handle per thread and direction: a handle is not thread-safe, and making one per
// image would cost more than small images take to decode.
class Handle {
 public:
  explicit Handle(tjhandle handle) : handle_(handle) {
    if (handle_ == nullptr) throw ImageError(fmt::format("libjpeg-turbo could not start: {}", tjGetErrorStr2(nullptr)));
  }
  ~Handle() { tjDestroy(handle_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

tjhandle Decompressor() {
  thread_local Handle handle(tjInitDecompress());
  return handle.get();
}

tjhandle Compressor() {
  thread_local Handle handle(tjInitCompress());
  return handle.get();
}

int PixelFormat(ColorSpace color_space) {
  switch (color_space) {
    case ColorSpace::kRGB: return TJPF_RGB;
    case ColorSpace::kBGR: return TJPF_BGR;
    case ColorSpace::kGray: return TJPF_GRAY;
  }
  return TJPF_RGB;
}

bool IsJpeg(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff;
}

constexpr std::uint8_t kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

bool IsPng(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= sizeof(kPngSignature) && std::equal(std::begin(kPngSignature), std::end(kPngSignature), bytes.begin());
}

// Larger images are refused rather than allocated (OpenCV's own limit is 2^30 pixels too).
constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 30;

// The first bytes in hex ("with nothing" for none), for errors that say what bytes are not.
std::string Head(std::span<const std::uint8_t> bytes) {
  std::string head;
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 4); ++i) head += fmt::format("{:02x}", bytes[i]);
  return head.empty() ? "with nothing" : head;
}

void CheckJpegMagic(std::span<const std::uint8_t> bytes) {
  if (!IsJpeg(bytes)) {
    throw ImageError(fmt::format("not a JPEG ({} bytes starting {}; Weir decodes JPEG images)", bytes.size(), Head(bytes)));
  }
}

// Source sample positions of a resize along one axis: index and weight of the lower neighbour.
struct Taps {
  std::vector<int> lower;
  std::vector<float> weight;  // of the upper neighbour
};

Taps BilinearTaps(int from, int to) {
  Taps taps;
  taps.lower.resize(static_cast<std::size_t>(to));
  taps.weight.resize(static_cast<std::size_t>(to));
  const double scale = static_cast<double>(from) / to;
  for (int i = 0; i < to; ++i) {
    double x = (i + 0.5) * scale - 0.5;
    x = std::clamp(x, 0.0, static_cast<double>(from - 1));
    const int low = std::min(static_cast<int>(x), std::max(from - 2, 0));
    taps.lower[static_cast<std::size_t>(i)] = low;
    taps.weight[static_cast<std::size_t>(i)] = from == 1 ? 0.0f : static_cast<float>(x - low);
  }
  return taps;
}

template <typename T> T FromFloat(float value) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    // Blends of u8 values lie in [0, 255]: rounding half up by truncation, which vectorizes (lround does not).
    return static_cast<std::uint8_t>(static_cast<int>(std::clamp(value, 0.0f, 255.0f) + 0.5f));
  } else {
    return static_cast<T>(value);
  }
}

}  // namespace

ColorSpace ParseColorSpace(std::string_view name, std::string_view what) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "RGB") return ColorSpace::kRGB;
  if (upper == "BGR") return ColorSpace::kBGR;
  if (upper == "GRAY") return ColorSpace::kGray;
  throw std::invalid_argument(fmt::format("{}: color_space must be 'RGB', 'BGR' or 'GRAY', got '{}'", what, name));
}

int Channels(ColorSpace color_space) { return color_space == ColorSpace::kGray ? 1 : 3; }

Size JpegSize(std::span<const std::uint8_t> bytes) {
  CheckJpegMagic(bytes);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(Decompressor(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width, &height,
                          &subsampling, &colorspace) != 0) {
    throw ImageError(fmt::format("a corrupt JPEG: {}", tjGetErrorStr2(Decompressor())));
  }
  if (width < 1 || height < 1) {  // a header cut short is a warning to libjpeg-turbo, with no size
    throw ImageError(fmt::format("a corrupt or truncated JPEG ({} bytes): {}", bytes.size(), tjGetErrorStr2(Decompressor())));
  }
  return {height, width};
}

Size DecodePng(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels) {
  if (!IsPng(bytes)) throw ImageError(fmt::format("not a PNG ({} bytes without the PNG signature)", bytes.size()));
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0) {
    throw ImageError(fmt::format("a corrupt PNG: {}", png.message));
  }
  const Size size{static_cast<int>(png.height), static_cast<int>(png.width)};
  if (png.height < 1 || png.width < 1 || static_cast<std::uint64_t>(png.height) * png.width > kMaxPixels) {
    png_image_free(&png);
    throw ImageError(fmt::format("a PNG of {} x {} pixels (Weir decodes up to 2^30)", png.width, png.height));
  }
  // Read with an alpha channel (255 where the PNG has none), then drop it: no compositing. Gray is the
  // BT.601 luma of the 8-bit values, as JPEGs decode to gray (libpng's own conversion is in linear light).
  const int channels = Channels(color_space);
  png.format = color_space == ColorSpace::kBGR ? PNG_FORMAT_BGRA : PNG_FORMAT_RGBA;
  thread_local std::vector<std::uint8_t> with_alpha;
  with_alpha.resize(PNG_IMAGE_SIZE(png));
  if (png_image_finish_read(&png, nullptr, with_alpha.data(), 0, nullptr) == 0) {
    const std::string message = png.message;
    png_image_free(&png);
    throw ImageError(fmt::format("a corrupt PNG: {}", message));
  }
  const std::size_t count = static_cast<std::size_t>(size.height) * static_cast<std::size_t>(size.width);
  pixels.resize(count * static_cast<std::size_t>(channels));
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* in = with_alpha.data() + 4 * i;
    if (color_space == ColorSpace::kGray) {
      pixels[i] = static_cast<std::uint8_t>(std::lround(0.299 * in[0] + 0.587 * in[1] + 0.114 * in[2]));
    } else {
      std::copy(in, in + 3, pixels.data() + 3 * i);
    }
  }
  return size;
}

std::vector<std::uint8_t> EncodePng(const std::uint8_t* pixels, Size size, int channels) {
  if (channels != 1 && channels != 3 && channels != 4) {
    throw std::invalid_argument(fmt::format("EncodePng: 1, 3 or 4 channels, got {}", channels));
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(size.width);
  png.height = static_cast<png_uint_32>(size.height);
  png.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_alloc_size_t bytes = 0;
  if (png_image_write_to_memory(&png, nullptr, &bytes, 0, pixels, 0, nullptr) == 0) {
    throw std::runtime_error(fmt::format("EncodePng: {}", png.message));
  }
  std::vector<std::uint8_t> out(bytes);
  if (png_image_write_to_memory(&png, out.data(), &bytes, 0, pixels, 0, nullptr) == 0) {
    throw std::runtime_error(fmt::format("EncodePng: {}", png.message));
  }
  out.resize(bytes);
  return out;
}

Size DecodeImage(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels) {
  if (IsPng(bytes)) return DecodePng(bytes, color_space, pixels);
  if (IsJpeg(bytes)) return DecodeJpeg(bytes, color_space, pixels);
  throw ImageError(fmt::format("not a JPEG or PNG ({} bytes starting {}; Weir decodes JPEG and PNG images)", bytes.size(),
                               Head(bytes)));
}

Size DecodeJpeg(std::span<const std::uint8_t> bytes, ColorSpace color_space, std::vector<std::uint8_t>& pixels) {
  const Size size = JpegSize(bytes);
  pixels.resize(static_cast<std::size_t>(size.height) * static_cast<std::size_t>(size.width) *
                static_cast<std::size_t>(Channels(color_space)));
  if (tjDecompress2(Decompressor(), bytes.data(), static_cast<unsigned long>(bytes.size()), pixels.data(), size.width, 0,
                    size.height, PixelFormat(color_space), 0) != 0 &&
      tjGetErrorCode(Decompressor()) == TJERR_FATAL) {
    // A warning (TJERR_WARNING: a truncated but usable image, say) keeps what was decoded, as OpenCV does.
    throw ImageError(fmt::format("a corrupt JPEG: {}", tjGetErrorStr2(Decompressor())));
  }
  return size;
}

std::vector<std::uint8_t> EncodeJpeg(const std::uint8_t* pixels, Size size, int channels, int quality) {
  if (channels != 1 && channels != 3) throw std::invalid_argument(fmt::format("EncodeJpeg: 1 or 3 channels, got {}", channels));
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;
  if (tjCompress2(Compressor(), pixels, size.width, 0, size.height, channels == 1 ? TJPF_GRAY : TJPF_RGB, &jpeg, &jpeg_size,
                  channels == 1 ? TJSAMP_GRAY : TJSAMP_444, quality, 0) != 0) {
    tjFree(jpeg);
    throw ImageError(fmt::format("JPEG encoding failed: {}", tjGetErrorStr2(Compressor())));
  }
  std::vector<std::uint8_t> out(jpeg, jpeg + jpeg_size);
  tjFree(jpeg);
  return out;
}

Window RandomWindow(Size image, std::span<const double> area, std::span<const double> aspect_ratio, int attempts,
                    std::mt19937_64& rng) {
  const double total = static_cast<double>(image.height) * image.width;
  std::uniform_real_distribution<double> area_draw(area[0], area[1]);
  std::uniform_real_distribution<double> log_ratio_draw(std::log(aspect_ratio[0]), std::log(aspect_ratio[1]));
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const double target = total * area_draw(rng);
    const double ratio = std::exp(log_ratio_draw(rng));
    const int width = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int height = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (width > 0 && height > 0 && width <= image.width && height <= image.height) {
      std::uniform_int_distribution<int> x(0, image.width - width);
      std::uniform_int_distribution<int> y(0, image.height - height);
      const int left = x(rng);
      return {left, y(rng), width, height};
    }
  }
  // The fallback: the whole image, narrowed to the nearest allowed aspect ratio, centred.
  const double ratio = static_cast<double>(image.width) / image.height;
  int width = image.width, height = image.height;
  if (ratio < aspect_ratio[0]) {
    height = std::max(1, static_cast<int>(std::lround(width / aspect_ratio[0])));
  } else if (ratio > aspect_ratio[1]) {
    width = std::max(1, static_cast<int>(std::lround(height * aspect_ratio[1])));
  }
  return {(image.width - width) / 2, (image.height - height) / 2, width, height};
}

void Crop(const std::uint8_t* pixels, Size size, int channels, Window window, std::vector<std::uint8_t>& out) {
  const std::size_t row = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(channels);
  out.resize(row * static_cast<std::size_t>(window.height));
  for (int y = 0; y < window.height; ++y) {
    const std::uint8_t* from = pixels + ((static_cast<std::size_t>(window.y + y) * static_cast<std::size_t>(size.width) +
                                          static_cast<std::size_t>(window.x)) *
                                         static_cast<std::size_t>(channels));
    std::copy(from, from + row, out.data() + row * static_cast<std::size_t>(y));
  }
}

Interpolation ParseInterpolation(std::string_view name, std::string_view what) {
  if (name == "auto" || name == "bilinear") return Interpolation::kBilinear;
  if (name == "nearest_neighbor") return Interpolation::kNearest;
  if (name == "bicubic") return Interpolation::kBicubic;
  if (name == "area") return Interpolation::kArea;
  throw std::invalid_argument(fmt::format(
      "{}: interpolation_type must be 'auto', 'bilinear', 'nearest_neighbor', 'bicubic' or 'area', got '{}'", what,
      name));
}

namespace {

// Each output sample along one axis as a weighted sum of source samples: taps first[i] .. first[i] +
// count[i] - 1 of `index` and `weight` (indices already clamped to the source).
struct Filter {
  std::vector<int> first;             // into index / weight, per output sample
  std::vector<int> count;
  std::vector<int> index;             // source sample
  std::vector<float> weight;
};

// Keys' cubic convolution kernel with OpenCV's a = -0.75: the weights of the four neighbours of a
// sample at fraction t past the second.
std::array<float, 4> CubicWeights(float t) {
  constexpr float a = -0.75f;
  const float u = t + 1, v = 1 - t;
  const float w0 = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  const float w1 = ((a + 2) * t - (a + 3)) * t * t + 1;
  const float w2 = ((a + 2) * v - (a + 3)) * v * v + 1;
  return {w0, w1, w2, 1 - w0 - w1 - w2};
}

Filter CubicFilter(int from, int to) {
  Filter filter;
  const double scale = static_cast<double>(from) / to;
  for (int i = 0; i < to; ++i) {
    const double x = (i + 0.5) * scale - 0.5;
    const int base = static_cast<int>(std::floor(x));
    const std::array<float, 4> w = CubicWeights(static_cast<float>(x - base));
    filter.first.push_back(static_cast<int>(filter.index.size()));
    filter.count.push_back(4);
    for (int k = 0; k < 4; ++k) {
      filter.index.push_back(std::clamp(base - 1 + k, 0, from - 1));
      filter.weight.push_back(w[static_cast<std::size_t>(k)]);
    }
  }
  return filter;
}

// Output sample i covers [i, i + 1) * from / to of the source: each source sample weighs by its share
// of that span.
Filter AreaFilter(int from, int to) {
  Filter filter;
  const double scale = static_cast<double>(from) / to;
  for (int i = 0; i < to; ++i) {
    const double begin = i * scale, end = (i + 1) * scale;
    filter.first.push_back(static_cast<int>(filter.index.size()));
    int taps = 0;
    for (int j = static_cast<int>(std::floor(begin)); j < end && j < from; ++j) {
      const double covered = std::min<double>(end, j + 1) - std::max<double>(begin, j);
      if (covered <= 1e-12) continue;
      filter.index.push_back(j);
      filter.weight.push_back(static_cast<float>(covered / scale));
      ++taps;
    }
    filter.count.push_back(taps);
  }
  return filter;
}

// Separable resampling: every source row filtered along x into `rows` (from.height x to.width x c
// floats), then each output row as a weighted sum of those rows.
template <typename T>
void ResizeSeparable(const std::uint8_t* src, Size from, int channels, T* dst, Size to, const Filter& xs, const Filter& ys) {
  const std::size_t c = static_cast<std::size_t>(channels);
  const std::size_t out_row = static_cast<std::size_t>(to.width) * c;
  std::vector<float> rows(static_cast<std::size_t>(from.height) * out_row, 0.0f);
  for (int y = 0; y < from.height; ++y) {
    const std::uint8_t* in = src + static_cast<std::size_t>(y) * static_cast<std::size_t>(from.width) * c;
    float* row = rows.data() + static_cast<std::size_t>(y) * out_row;
    for (int x = 0; x < to.width; ++x) {
      const auto at = static_cast<std::size_t>(xs.first[static_cast<std::size_t>(x)]);
      for (int t = 0; t < xs.count[static_cast<std::size_t>(x)]; ++t) {
        const std::size_t from_x = static_cast<std::size_t>(xs.index[at + static_cast<std::size_t>(t)]) * c;
        const float w = xs.weight[at + static_cast<std::size_t>(t)];
        for (std::size_t k = 0; k < c; ++k) row[static_cast<std::size_t>(x) * c + k] += w * in[from_x + k];
      }
    }
  }
  std::vector<float> sum(out_row);
  for (int y = 0; y < to.height; ++y) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    const auto at = static_cast<std::size_t>(ys.first[static_cast<std::size_t>(y)]);
    for (int t = 0; t < ys.count[static_cast<std::size_t>(y)]; ++t) {
      const float* row = rows.data() + static_cast<std::size_t>(ys.index[at + static_cast<std::size_t>(t)]) * out_row;
      const float w = ys.weight[at + static_cast<std::size_t>(t)];
      for (std::size_t i = 0; i < out_row; ++i) sum[i] += w * row[i];
    }
    T* out = dst + static_cast<std::size_t>(y) * out_row;
    for (std::size_t i = 0; i < out_row; ++i) out[i] = FromFloat<T>(sum[i]);
  }
}

}  // namespace

template <typename T>
void Resize(const std::uint8_t* src, Size from, int channels, T* dst, Size to, Interpolation interpolation) {
  if (interpolation == Interpolation::kBicubic) {
    ResizeSeparable(src, from, channels, dst, to, CubicFilter(from.width, to.width), CubicFilter(from.height, to.height));
    return;
  }
  if (interpolation == Interpolation::kArea) {
    ResizeSeparable(src, from, channels, dst, to, AreaFilter(from.width, to.width), AreaFilter(from.height, to.height));
    return;
  }
  const std::size_t c = static_cast<std::size_t>(channels);
  const std::size_t src_row = static_cast<std::size_t>(from.width) * c;
  if (interpolation == Interpolation::kNearest) {
    for (int y = 0; y < to.height; ++y) {
      const int sy = std::min(static_cast<int>((y + 0.5) * from.height / to.height), from.height - 1);
      for (int x = 0; x < to.width; ++x) {
        const int sx = std::min(static_cast<int>((x + 0.5) * from.width / to.width), from.width - 1);
        const std::uint8_t* in = src + static_cast<std::size_t>(sy) * src_row + static_cast<std::size_t>(sx) * c;
        T* out = dst + (static_cast<std::size_t>(y) * static_cast<std::size_t>(to.width) + static_cast<std::size_t>(x)) * c;
        for (std::size_t k = 0; k < c; ++k) out[k] = static_cast<T>(in[k]);
      }
    }
    return;
  }
  const Taps xs = BilinearTaps(from.width, to.width);
  const Taps ys = BilinearTaps(from.height, to.height);
  // Rows blended horizontally once each, then pairs of them vertically.
  std::vector<float> upper(static_cast<std::size_t>(to.width) * c), lower(upper.size());
  const auto blend_row = [&](int sy, std::vector<float>& row) {
    const std::uint8_t* in = src + static_cast<std::size_t>(sy) * src_row;
    for (int x = 0; x < to.width; ++x) {
      const std::size_t left = static_cast<std::size_t>(xs.lower[static_cast<std::size_t>(x)]) * c;
      const std::size_t right = from.width == 1 ? left : left + c;
      const float w = xs.weight[static_cast<std::size_t>(x)];
      for (std::size_t k = 0; k < c; ++k) {
        row[static_cast<std::size_t>(x) * c + k] = in[left + k] + w * (static_cast<float>(in[right + k]) - in[left + k]);
      }
    }
  };
  int have_upper = -1, have_lower = -1;
  for (int y = 0; y < to.height; ++y) {
    const int top = ys.lower[static_cast<std::size_t>(y)];
    const int bottom = from.height == 1 ? top : top + 1;
    if (have_upper != top) {
      if (have_lower == top) {
        std::swap(upper, lower);
        std::swap(have_upper, have_lower);
      } else {
        blend_row(top, upper);
        have_upper = top;
      }
    }
    if (have_lower != bottom) {
      blend_row(bottom, lower);
      have_lower = bottom;
    }
    const float w = ys.weight[static_cast<std::size_t>(y)];
    T* out = dst + static_cast<std::size_t>(y) * static_cast<std::size_t>(to.width) * c;
    for (std::size_t i = 0; i < upper.size(); ++i) out[i] = FromFloat<T>(upper[i] + w * (lower[i] - upper[i]));
  }
}

template void Resize<std::uint8_t>(const std::uint8_t*, Size, int, std::uint8_t*, Size, Interpolation);
template void Resize<float>(const std::uint8_t*, Size, int, float*, Size, Interpolation);

}  // namespace weir::internal::image
