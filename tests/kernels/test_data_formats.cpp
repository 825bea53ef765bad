// The data pipeline's formats and image code: the OFRecord decoder against records it serialized and
// records in the other encodings protobuf allows (unpacked lists, unknown fields), fuzzed with
// corrupt input (it must throw FormatError or parse, never read out of bounds: ASan checks); JPEG
// round trips and errors; the random crop window's bounds; bilinear resizing against a direct
// double-precision evaluation; a C++ job reading a dataset through the data ops; Megatron-LM token
// datasets, their index fuzzed the same way, read by a C++ job.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "kernels/data/image.hpp"
#include "kernels/data/megatron_dataset.hpp"
#include "kernels/data/ofrecord.hpp"
#include "scratch_dir.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::internal;
using weir::testing::ScratchDir;

namespace {

std::vector<std::uint8_t> SampleRecord() {
  return ofrecord::Serialize({
      {"image", {.kind = ofrecord::FeatureKind::kBytes, .bytes = {"\x01\x02\x03", ""}}},
      {"floats", {.kind = ofrecord::FeatureKind::kFloat, .numbers = {1.5, -2.25, 3.0}}},
      {"doubles", {.kind = ofrecord::FeatureKind::kDouble, .numbers = {0.1}}},
      {"ints", {.kind = ofrecord::FeatureKind::kInt32, .numbers = {-7, 2147483647, 0}}},
      {"longs", {.kind = ofrecord::FeatureKind::kInt64, .numbers = {-1099511627776.0, 5}}},
  });
}

template <typename T> std::vector<T> Read(std::span<const std::uint8_t> record, std::string_view name) {
  const std::optional<ofrecord::Feature> feature = ofrecord::Find(record, name);
  REQUIRE(feature.has_value());
  std::vector<T> values(static_cast<std::size_t>(ofrecord::CountValues(*feature)));
  CHECK(ofrecord::ReadValues<T>(*feature, values.data(), static_cast<std::int64_t>(values.size())) ==
        static_cast<std::int64_t>(values.size()));
  return values;
}

void Append(std::vector<std::uint8_t>& out, std::initializer_list<int> bytes) {
  for (int b : bytes) out.push_back(static_cast<std::uint8_t>(b));
}

// `valid` after 1 to `max_edits` random byte flips, insertions and deletions: the fuzzers' input.
std::vector<std::uint8_t> RandomlyEdited(const std::vector<std::uint8_t>& valid, std::mt19937& gen, int max_edits) {
  std::vector<std::uint8_t> bytes = valid;
  const int edits = 1 + static_cast<int>(gen() % static_cast<unsigned>(max_edits));
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const std::size_t at = gen() % bytes.size();
    switch (gen() % 3) {
      case 0: bytes[at] = static_cast<std::uint8_t>(gen()); break;
      case 1: bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(gen())); break;
      default: bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at)); break;
    }
  }
  return bytes;
}

}  // namespace

TEST_CASE("OFRecords decode to the values they were made of") {
  const std::vector<std::uint8_t> record = SampleRecord();
  ofrecord::Validate(record);
  CHECK(ofrecord::FeatureNames(record) == std::vector<std::string>{"image", "floats", "doubles", "ints", "longs"});
  CHECK(Read<float>(record, "floats") == std::vector<float>{1.5f, -2.25f, 3.0f});
  CHECK(Read<double>(record, "doubles") == std::vector<double>{0.1});
  CHECK(Read<std::int32_t>(record, "ints") == std::vector<std::int32_t>{-7, 2147483647, 0});
  CHECK(Read<std::int64_t>(record, "longs") == std::vector<std::int64_t>{-1099511627776LL, 5});
  CHECK(Read<float>(record, "ints") == std::vector<float>{-7.0f, 2147483647.0f, 0.0f});  // converted
  // A bytes_list read as numbers is its bytes one after another (an image stored raw), counted as such.
  std::vector<std::uint8_t> raw(5, 9);
  CHECK(ofrecord::ReadValues<std::uint8_t>(*ofrecord::Find(record, "image"), raw.data(), 2) == 3);
  CHECK(raw == std::vector<std::uint8_t>{1, 2, 9, 9, 9});
  const std::vector<std::span<const std::uint8_t>> bytes = ofrecord::BytesValues(*ofrecord::Find(record, "image"));
  REQUIRE(bytes.size() == 2);
  CHECK(std::vector<std::uint8_t>(bytes[0].begin(), bytes[0].end()) == std::vector<std::uint8_t>{1, 2, 3});
  CHECK(bytes[1].empty());
  CHECK_FALSE(ofrecord::Find(record, "missing").has_value());
  CHECK_THROWS_AS(ofrecord::BytesValues(*ofrecord::Find(record, "floats")), ofrecord::FormatError);
}

TEST_CASE("OFRecords in protobuf's other encodings decode too: unpacked lists, unknown fields, repeated keys") {
  // feature "n" -> int64_list with two unpacked values (1, 300), then an unknown varint field 9.
  std::vector<std::uint8_t> list;
  Append(list, {0x08, 0x01, 0x08, 0xac, 0x02});
  std::vector<std::uint8_t> feature;
  Append(feature, {0x2a, static_cast<int>(list.size())});
  feature.insert(feature.end(), list.begin(), list.end());
  std::vector<std::uint8_t> entry;
  Append(entry, {0x0a, 0x01, 'n', 0x12, static_cast<int>(feature.size())});
  entry.insert(entry.end(), feature.begin(), feature.end());
  std::vector<std::uint8_t> record;
  Append(record, {0x0a, static_cast<int>(entry.size())});
  record.insert(record.end(), entry.begin(), entry.end());
  Append(record, {0x48, 0x05});  // field 9, varint 5: skipped
  // Unpacked floats: float_list of fixed32 values 1.0 and 2.0, under a second key "f".
  std::vector<std::uint8_t> floats;
  Append(floats, {0x0d, 0x00, 0x00, 0x80, 0x3f, 0x0d, 0x00, 0x00, 0x00, 0x40});
  std::vector<std::uint8_t> feature2;
  Append(feature2, {0x12, static_cast<int>(floats.size())});
  feature2.insert(feature2.end(), floats.begin(), floats.end());
  std::vector<std::uint8_t> entry2;
  Append(entry2, {0x0a, 0x01, 'f', 0x12, static_cast<int>(feature2.size())});
  entry2.insert(entry2.end(), feature2.begin(), feature2.end());
  Append(record, {0x0a, static_cast<int>(entry2.size())});
  record.insert(record.end(), entry2.begin(), entry2.end());
  ofrecord::Validate(record);
  CHECK(Read<std::int64_t>(record, "n") == std::vector<std::int64_t>{1, 300});
  CHECK(Read<float>(record, "f") == std::vector<float>{1.0f, 2.0f});
  // A second entry for "n" (a map's later key wins).
  const std::vector<std::uint8_t> again = ofrecord::Serialize({{"n", {.kind = ofrecord::FeatureKind::kInt32, .numbers = {9}}}});
  record.insert(record.end(), again.begin(), again.end());
  CHECK(Read<std::int32_t>(record, "n") == std::vector<std::int32_t>{9});
}

TEST_CASE("corrupt OFRecords throw FormatError and never read past their end") {
  const std::vector<std::uint8_t> valid = SampleRecord();
  // Every truncation of a valid record.
  int rejected = 0;
  for (std::size_t size = 0; size < valid.size(); ++size) {
    const std::vector<std::uint8_t> cut(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(size));
    try {
      ofrecord::Validate(cut);
      for (const std::string& name : ofrecord::FeatureNames(cut)) ofrecord::CountValues(*ofrecord::Find(cut, name));
    } catch (const ofrecord::FormatError&) {
      ++rejected;
    }
  }
  CHECK(rejected > static_cast<int>(valid.size()) / 2);
  // Random byte flips, insertions and deletions: each either parses or throws FormatError.
  std::mt19937 gen(7);
  int parsed = 0, thrown = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::vector<std::uint8_t> bytes = RandomlyEdited(valid, gen, 4);
    try {
      ofrecord::Validate(bytes);
      for (const std::string& name : ofrecord::FeatureNames(bytes)) {
        const ofrecord::Feature feature = *ofrecord::Find(bytes, name);
        if (feature.kind == ofrecord::FeatureKind::kBytes) {
          ofrecord::BytesValues(feature);
        } else {
          std::vector<double> values(static_cast<std::size_t>(ofrecord::CountValues(feature)));
          ofrecord::ReadValues<double>(feature, values.data(), static_cast<std::int64_t>(values.size()));
        }
      }
      ++parsed;
    } catch (const ofrecord::FormatError&) {
      ++thrown;
    }
  }
  CHECK(parsed > 0);
  CHECK(thrown > 0);
  // A varint of 11 bytes, a length beyond the end, a group.
  CHECK_THROWS_WITH_AS(ofrecord::Validate(std::vector<std::uint8_t>(11, 0xff)), doctest::Contains("longer than 10 bytes"),
                       ofrecord::FormatError);
  CHECK_THROWS_WITH_AS(ofrecord::Validate(std::vector<std::uint8_t>{0x0a, 0x7f, 0x00}), doctest::Contains("runs past the end"),
                       ofrecord::FormatError);
  CHECK_THROWS_WITH_AS(ofrecord::Validate(std::vector<std::uint8_t>{0x0b}), doctest::Contains("wire type 3"), ofrecord::FormatError);
}

TEST_CASE("JPEGs round-trip through libjpeg-turbo, and bad ones are errors") {
  const image::Size size{24, 40};
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(size.height * size.width * 3));
  for (int y = 0; y < size.height; ++y) {
    for (int x = 0; x < size.width; ++x) {
      std::uint8_t* p = rgb.data() + (y * size.width + x) * 3;
      p[0] = static_cast<std::uint8_t>(x * 6);
      p[1] = static_cast<std::uint8_t>(y * 10);
      p[2] = 128;
    }
  }
  const std::vector<std::uint8_t> jpeg = image::EncodeJpeg(rgb.data(), size, 3, 98);
  CHECK(image::JpegSize(jpeg).height == 24);
  CHECK(image::JpegSize(jpeg).width == 40);
  std::vector<std::uint8_t> decoded, bgr, gray;
  image::DecodeJpeg(jpeg, image::ColorSpace::kRGB, decoded);
  image::DecodeJpeg(jpeg, image::ColorSpace::kBGR, bgr);
  image::DecodeJpeg(jpeg, image::ColorSpace::kGray, gray);
  REQUIRE(decoded.size() == rgb.size());
  REQUIRE(gray.size() == rgb.size() / 3);
  int worst = 0;
  for (std::size_t i = 0; i < rgb.size(); ++i) worst = std::max(worst, std::abs(decoded[i] - rgb[i]));
  CHECK(worst <= 8);
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    CHECK(bgr[i] == decoded[i + 2]);
    CHECK(bgr[i + 2] == decoded[i]);
  }
  CHECK_THROWS_WITH_AS(image::JpegSize(std::vector<std::uint8_t>{0x89, 'P', 'N', 'G'}), doctest::Contains("not a JPEG"),
                       image::ImageError);
  std::vector<std::uint8_t> broken(jpeg.begin(), jpeg.begin() + 20);
  CHECK_THROWS_AS(image::DecodeJpeg(broken, image::ColorSpace::kRGB, decoded), image::ImageError);
  CHECK_THROWS_AS(image::ParseColorSpace("HSV", "test"), std::invalid_argument);
}

TEST_CASE("PNGs decode losslessly in every color space, alpha dropped; DecodeImage tells PNG from JPEG") {
  const image::Size size{24, 40};
  std::vector<std::uint8_t> rgba(static_cast<std::size_t>(size.height * size.width * 4));
  std::vector<std::uint8_t> rgb;
  for (int y = 0; y < size.height; ++y) {
    for (int x = 0; x < size.width; ++x) {
      std::uint8_t* p = rgba.data() + (y * size.width + x) * 4;
      p[0] = static_cast<std::uint8_t>(x * 6);
      p[1] = static_cast<std::uint8_t>(y * 10);
      p[2] = static_cast<std::uint8_t>(x * y);
      p[3] = static_cast<std::uint8_t>(x * 5 + y);  // not composited: the colour stays as it is
      rgb.insert(rgb.end(), p, p + 3);
    }
  }
  for (const bool with_alpha : {false, true}) {
    CAPTURE(with_alpha);
    const std::vector<std::uint8_t> png = with_alpha ? image::EncodePng(rgba.data(), size, 4) : image::EncodePng(rgb.data(), size, 3);
    std::vector<std::uint8_t> decoded, bgr, gray, any;
    CHECK(image::DecodePng(png, image::ColorSpace::kRGB, decoded).width == 40);
    CHECK(decoded == rgb);  // lossless
    image::DecodePng(png, image::ColorSpace::kBGR, bgr);
    REQUIRE(bgr.size() == rgb.size());
    for (std::size_t i = 0; i < rgb.size(); i += 3) {
      CHECK(bgr[i] == rgb[i + 2]);
      CHECK(bgr[i + 2] == rgb[i]);
    }
    image::DecodePng(png, image::ColorSpace::kGray, gray);
    REQUIRE(gray.size() == rgb.size() / 3);
    for (std::size_t i = 0; i < gray.size(); ++i) {  // BT.601 luma, as a JPEG decodes to gray
      const double luma = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
      REQUIRE(std::abs(gray[i] - luma) <= 0.5 + 1e-9);
    }
    const image::Size got = image::DecodeImage(png, image::ColorSpace::kRGB, any);
    CHECK(got.height == 24);
    CHECK(any == rgb);
  }
  // A gray PNG to RGB repeats the level, and back to gray keeps it.
  std::vector<std::uint8_t> levels(static_cast<std::size_t>(size.height * size.width));
  for (std::size_t i = 0; i < levels.size(); ++i) levels[i] = static_cast<std::uint8_t>(i);
  std::vector<std::uint8_t> from_gray, to_gray;
  const std::vector<std::uint8_t> gray_png = image::EncodePng(levels.data(), size, 1);
  image::DecodePng(gray_png, image::ColorSpace::kRGB, from_gray);
  image::DecodePng(gray_png, image::ColorSpace::kGray, to_gray);
  CHECK(to_gray == levels);
  for (std::size_t i = 0; i < levels.size(); ++i) REQUIRE(from_gray[3 * i + 1] == levels[i]);
  // JPEG through the same entry; errors name what the bytes are.
  std::vector<std::uint8_t> decoded;
  CHECK(image::DecodeImage(image::EncodeJpeg(rgb.data(), size, 3, 95), image::ColorSpace::kRGB, decoded).width == 40);
  CHECK_THROWS_WITH_AS(image::DecodeImage(std::vector<std::uint8_t>{'G', 'I', 'F', '8'}, image::ColorSpace::kRGB, decoded),
                       "not a JPEG or PNG (4 bytes starting 47494638; Weir decodes JPEG and PNG images)", image::ImageError);
  const std::vector<std::uint8_t> png = image::EncodePng(rgb.data(), size, 3);
  const std::vector<std::uint8_t> truncated(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  CHECK_THROWS_WITH_AS(image::DecodeImage(truncated, image::ColorSpace::kRGB, decoded), doctest::Contains("a corrupt PNG"),
                       image::ImageError);
  std::vector<std::uint8_t> bad_crc = png;
  bad_crc[20] ^= 0xff;  // inside IHDR
  CHECK_THROWS_AS(image::DecodePng(bad_crc, image::ColorSpace::kRGB, decoded), image::ImageError);
}

TEST_CASE("random crop windows lie inside the image with the asked area and aspect ratio") {
  std::mt19937_64 rng(3);
  const double area[] = {0.08, 1.0};
  const double ratio[] = {0.75, 4.0 / 3.0};
  int fallbacks = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const image::Size size{static_cast<int>(20 + rng() % 200), static_cast<int>(20 + rng() % 200)};
    const image::Window w = image::RandomWindow(size, area, ratio, 10, rng);
    REQUIRE(w.x >= 0);
    REQUIRE(w.y >= 0);
    REQUIRE(w.width >= 1);
    REQUIRE(w.height >= 1);
    REQUIRE(w.x + w.width <= size.width);
    REQUIRE(w.y + w.height <= size.height);
    const double fraction = static_cast<double>(w.width) * w.height / (static_cast<double>(size.width) * size.height);
    if (fraction > 1.0 - 1e-9) ++fallbacks;
    CHECK(fraction >= 0.05);
  }
  CHECK(fallbacks < 400);
  // An image far wider than any allowed ratio: the fallback is its centred window of ratio 4:3.
  const image::Window wide = image::RandomWindow({10, 200}, std::span<const double>(area), ratio, 0, rng);
  CHECK(wide.height == 10);
  CHECK(wide.width == 13);
  CHECK(wide.x == (200 - 13) / 2);
}

TEST_CASE("bilinear resize matches a direct evaluation with half-pixel centres") {
  std::mt19937 gen(5);
  for (const auto& [from, to] : std::vector<std::pair<image::Size, image::Size>>{
           {{7, 9}, {13, 4}}, {{1, 5}, {3, 3}}, {{16, 16}, {16, 16}}, {{30, 20}, {7, 11}}}) {
    const int c = 3;
    std::vector<std::uint8_t> src(static_cast<std::size_t>(from.height * from.width * c));
    for (auto& v : src) v = static_cast<std::uint8_t>(gen());
    std::vector<float> out(static_cast<std::size_t>(to.height * to.width * c));
    image::Resize(src.data(), from, c, out.data(), to, image::Interpolation::kBilinear);
    std::vector<std::uint8_t> rounded(out.size());
    image::Resize(src.data(), from, c, rounded.data(), to, image::Interpolation::kBilinear);
    const auto at = [&](int y, int x, int k) { return static_cast<double>(src[static_cast<std::size_t>((y * from.width + x) * c + k)]); };
    for (int y = 0; y < to.height; ++y) {
      const double sy = std::clamp((y + 0.5) * from.height / to.height - 0.5, 0.0, from.height - 1.0);
      const int y0 = static_cast<int>(sy), y1 = std::min(y0 + 1, from.height - 1);
      for (int x = 0; x < to.width; ++x) {
        const double sx = std::clamp((x + 0.5) * from.width / to.width - 0.5, 0.0, from.width - 1.0);
        const int x0 = static_cast<int>(sx), x1 = std::min(x0 + 1, from.width - 1);
        for (int k = 0; k < c; ++k) {
          const double top = at(y0, x0, k) + (sx - x0) * (at(y0, x1, k) - at(y0, x0, k));
          const double bottom = at(y1, x0, k) + (sx - x0) * (at(y1, x1, k) - at(y1, x0, k));
          const double expected = top + (sy - y0) * (bottom - top);
          const std::size_t i = static_cast<std::size_t>((y * to.width + x) * c + k);
          REQUIRE(std::abs(out[i] - expected) < 1e-3);
          REQUIRE(std::abs(rounded[i] - std::lround(expected)) <= 1);
        }
      }
    }
    if (from.height == to.height && from.width == to.width) CHECK(rounded == src);
  }
}

namespace {

// Keys' cubic convolution kernel at distance d, OpenCV's a = -0.75, in its piecewise textbook form.
double Keys(double d) {
  constexpr double a = -0.75;
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// OpenCV's bicubic resize of one sample, from its definition: half-pixel centres, the 4 x 4
// neighbours of the source position, edge pixels repeated.
double BicubicAt(const std::vector<std::uint8_t>& src, image::Size from, int c, image::Size to, int y, int x, int k) {
  const double sy = (y + 0.5) * from.height / to.height - 0.5, sx = (x + 0.5) * from.width / to.width - 0.5;
  const int iy = static_cast<int>(std::floor(sy)), ix = static_cast<int>(std::floor(sx));
  double value = 0;
  for (int j = -1; j <= 2; ++j) {
    for (int i = -1; i <= 2; ++i) {
      const int py = std::clamp(iy + j, 0, from.height - 1), px = std::clamp(ix + i, 0, from.width - 1);
      value += Keys(sy - (iy + j)) * Keys(sx - (ix + i)) * src[static_cast<std::size_t>((py * from.width + px) * c + k)];
    }
  }
  return value;
}

// Area resampling of one sample: the mean of the source over the rectangle the output pixel covers.
double AreaAt(const std::vector<std::uint8_t>& src, image::Size from, int c, image::Size to, int y, int x, int k) {
  const double sy = static_cast<double>(from.height) / to.height, sx = static_cast<double>(from.width) / to.width;
  double value = 0;
  for (int py = 0; py < from.height; ++py) {
    const double h = std::min<double>((y + 1) * sy, py + 1) - std::max<double>(y * sy, py);
    for (int px = 0; px < from.width && h > 0; ++px) {
      const double w = std::min<double>((x + 1) * sx, px + 1) - std::max<double>(x * sx, px);
      if (w > 0) value += h * w * src[static_cast<std::size_t>((py * from.width + px) * c + k)];
    }
  }
  return value / (sy * sx);
}

}  // namespace

TEST_CASE("bicubic and area resizes match direct evaluations of OpenCV's definitions") {
  CHECK(image::ParseInterpolation("bicubic", "t") == image::Interpolation::kBicubic);
  CHECK(image::ParseInterpolation("area", "t") == image::Interpolation::kArea);
  CHECK_THROWS_WITH_AS(image::ParseInterpolation("lanczos", "[image_resize]"),
                       "[image_resize]: interpolation_type must be 'auto', 'bilinear', 'nearest_neighbor', 'bicubic' "
                       "or 'area', got 'lanczos'",
                       std::invalid_argument);
  std::mt19937 gen(11);
  for (const auto interpolation : {image::Interpolation::kBicubic, image::Interpolation::kArea}) {
    // Up, down, mixed and non-integer factors; one-pixel images; the same size.
    for (const auto& [from, to] : std::vector<std::pair<image::Size, image::Size>>{
             {{7, 9}, {13, 4}}, {{1, 5}, {3, 3}}, {{16, 16}, {16, 16}}, {{30, 20}, {7, 11}}, {{5, 6}, {15, 18}}, {{9, 9}, {4, 4}}}) {
      CAPTURE(from.height);
      CAPTURE(from.width);
      CAPTURE(to.height);
      CAPTURE(to.width);
      const int c = 3;
      std::vector<std::uint8_t> src(static_cast<std::size_t>(from.height * from.width * c));
      for (auto& v : src) v = static_cast<std::uint8_t>(gen());
      std::vector<float> out(static_cast<std::size_t>(to.height * to.width * c));
      image::Resize(src.data(), from, c, out.data(), to, interpolation);
      std::vector<std::uint8_t> rounded(out.size());
      image::Resize(src.data(), from, c, rounded.data(), to, interpolation);
      for (int y = 0; y < to.height; ++y) {
        for (int x = 0; x < to.width; ++x) {
          for (int k = 0; k < c; ++k) {
            const double expected = interpolation == image::Interpolation::kBicubic ? BicubicAt(src, from, c, to, y, x, k)
                                                                                   : AreaAt(src, from, c, to, y, x, k);
            const std::size_t i = static_cast<std::size_t>((y * to.width + x) * c + k);
            REQUIRE(std::abs(out[i] - expected) < 1e-3 * std::max(1.0, std::abs(expected)));
            // u8: rounded and saturated (a bicubic overshoots at edges).
            REQUIRE(std::abs(rounded[i] - std::clamp(std::lround(expected), 0L, 255L)) <= 1);
          }
        }
      }
      if (from.height == to.height && from.width == to.width) CHECK(rounded == src);
    }
  }
}

TEST_CASE("a C++ job reads, decodes and normalizes its own batches from an OFRecord dataset") {
  ScratchDir dir("weir-ofrecord");
  // Two part files of 3 records: a 4x6 RGB image and its label, JPEGs in the first part, PNGs in the second.
  std::vector<std::vector<std::uint8_t>> pixels;
  for (int part = 0; part < 2; ++part) {
    std::FILE* file = std::fopen((dir.Path() / fmt::format("part-{}", part)).c_str(), "wb");
    REQUIRE(file != nullptr);
    for (int i = 0; i < 3; ++i) {
      const int label = part * 3 + i;
      std::vector<std::uint8_t> rgb(4 * 6 * 3, static_cast<std::uint8_t>(40 * label));
      pixels.push_back(rgb);
      const std::vector<std::uint8_t> encoded =
          part == 0 ? image::EncodeJpeg(rgb.data(), {4, 6}, 3, 100) : image::EncodePng(rgb.data(), {4, 6}, 3);
      const std::vector<std::uint8_t> record = ofrecord::Serialize(
          {{"encoded", {.kind = ofrecord::FeatureKind::kBytes, .bytes = {std::string(encoded.begin(), encoded.end())}}},
           {"label", {.kind = ofrecord::FeatureKind::kInt64, .numbers = {static_cast<double>(label)}}}});
      const std::uint64_t length = record.size();
      std::fwrite(&length, 8, 1, file);
      std::fwrite(record.data(), 1, record.size(), file);
    }
    std::fclose(file);
  }
  JobBuilder builder("read", JobType::kPredict);
  const Blob records = OFRecordReader(builder, {.data_dir = dir.Path().string(), .batch_size = 4, .data_part_num = 2});
  const Blob images = OFRecordImageDecoder(records, {.name = "encoded", .color_space = "RGB"});
  builder.Output("labels", OFRecordRawDecoder(records, {.name = "label", .shape = Shape{}, .dtype = DType::kI32}));
  builder.Output("images", CropMirrorNormalize(images, {}, {.color_space = "RGB", .crop_h = 4, .crop_w = 6, .mean = {0.0}, .std = {40.0}}));
  builder.Output("flips", CoinFlip(builder, {.batch_size = 4, .probability = 1.0}));
  Session session;
  const Job job = builder.Build();
  for (int call = 0; call < 3; ++call) {
    const Outputs out = session.Call(job, std::vector<Tensor>{});
    REQUIRE(out[0].GetShape() == Shape{4});
    REQUIRE(out[1].GetShape() == Shape{4, 3, 4, 6});
    for (int i = 0; i < 4; ++i) {
      const int label = out[0].Data<std::int32_t>()[i];
      CHECK(label == (call * 4 + i) % 6);
      CHECK(std::abs(out[1].Data<float>()[i * 72] - static_cast<float>(label)) < 0.05f);
      CHECK(out[2].Data<std::int8_t>()[i] == 1);
    }
  }
}

namespace {

// A Megatron dataset of `lengths` documents, document j holding 1000 * j + [0, length) as int32.
void WriteMegatron(const std::string& prefix, const std::vector<std::int32_t>& lengths) {
  std::FILE* bin = std::fopen((prefix + ".bin").c_str(), "wb");
  REQUIRE(bin != nullptr);
  std::vector<std::int64_t> addresses;
  std::int64_t at = 0;
  for (std::size_t j = 0; j < lengths.size(); ++j) {
    addresses.push_back(at);
    for (std::int32_t t = 0; t < lengths[j]; ++t) {
      const std::int32_t token = static_cast<std::int32_t>(1000 * j) + t;
      std::fwrite(&token, 4, 1, bin);
    }
    at += 4 * lengths[j];
  }
  std::fclose(bin);
  std::FILE* idx = std::fopen((prefix + ".idx").c_str(), "wb");
  REQUIRE(idx != nullptr);
  const std::uint64_t version = 1, count = lengths.size(), boundaries = lengths.size() + 1;
  const std::uint8_t code = 4;
  std::fwrite("MMIDIDX\0\0", 1, 9, idx);
  std::fwrite(&version, 8, 1, idx);
  std::fwrite(&code, 1, 1, idx);
  std::fwrite(&count, 8, 1, idx);
  std::fwrite(&boundaries, 8, 1, idx);
  std::fwrite(lengths.data(), 4, lengths.size(), idx);
  std::fwrite(addresses.data(), 8, addresses.size(), idx);
  for (std::uint64_t b = 0; b < boundaries; ++b) {
    const auto boundary = static_cast<std::int64_t>(b);
    std::fwrite(&boundary, 8, 1, idx);
  }
  std::fclose(idx);
}

std::vector<std::uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("corrupt Megatron indexes throw FormatError, and every sample of a good one stays in its files") {
  ScratchDir dir("weir-megatron");
  const std::string prefix = dir / "data";
  WriteMegatron(prefix, {5, 0, 9, 3, 7});
  const std::vector<std::uint8_t> valid = ReadBytes(prefix + ".idx");
  const megatron::SampleSpec spec{.seq_length = 4, .num_samples = 12, .shuffle = true, .seed = 3};
  {
    const megatron::Dataset dataset(prefix, spec);
    REQUIRE(dataset.Size() >= 12);
    std::vector<std::int64_t> sample(5);
    for (std::size_t i = 0; i < dataset.Size(); ++i) {
      dataset.Sample(i, sample.data());
      for (std::int64_t token : sample) CHECK((token % 1000 < 9 && token / 1000 < 5));
    }
    CHECK_THROWS_AS(dataset.Sample(dataset.Size(), sample.data()), std::out_of_range);
  }
  // Random byte flips, insertions and deletions of the index: each either reads, and then every
  // sample stays inside the .bin (ASan checks the mapping's bounds), or throws.
  std::mt19937 gen(11);
  int read = 0, thrown = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    WriteBytes(prefix + ".idx", RandomlyEdited(valid, gen, 3));
    try {
      const megatron::Dataset dataset(prefix, spec);
      std::vector<std::int32_t> sample(5);
      for (std::size_t i = 0; i < dataset.Size(); ++i) dataset.Sample(i, sample.data());
      ++read;
    } catch (const megatron::FormatError&) {
      ++thrown;
    } catch (const std::invalid_argument&) {  // a corrupt size that leaves the split without tokens
      ++thrown;
    }
  }
  CHECK(read > 0);
  CHECK(thrown > 0);
  WriteBytes(prefix + ".idx", std::vector<std::uint8_t>(valid.begin(), valid.begin() + 30));
  CHECK_THROWS_WITH_AS(megatron::ReadIndex(prefix), doctest::Contains("shorter than the 34-byte header"), megatron::FormatError);
}

TEST_CASE("a C++ job reads Megatron samples in order, and from an iteration variable where it says") {
  ScratchDir dir("weir-megatron");
  const std::string prefix = dir / "data";
  WriteMegatron(prefix, {5, 0, 9, 3, 7});  // 24 tokens
  const MegatronGptLoaderAttrs attrs{.data_file_prefix = prefix, .seq_length = 4, .num_samples = 10, .batch_size = 2,
                                     .dtype = DType::kI32, .shuffle = false};
  // The documents end to end, two epochs (10 samples of 4 need 41 tokens).
  std::vector<std::int32_t> stream;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (std::int32_t j : {0, 2, 3, 4}) {
      for (std::int32_t t = 0; t < std::vector<std::int32_t>{5, 0, 9, 3, 7}[static_cast<std::size_t>(j)]; ++t) stream.push_back(1000 * j + t);
    }
  }
  JobBuilder builder("tokens", JobType::kPredict);
  builder.Output("tokens", MegatronGptMmapDataLoader(builder, attrs));
  const Blob iteration = builder.Variable("iteration", {.shape = Shape{1}, .dtype = DType::kI64, .trainable = false});
  builder.Output("resumed", MegatronGptMmapDataLoader(iteration, attrs, "resumable"));
  Session session;
  const Job job = builder.Build();
  session.Compile(job);
  session.SetVariables({{"iteration", Tensor::FromVector<std::int64_t>(Shape{1}, {2})}}, false);
  for (int call = 0; call < 3; ++call) {
    const Outputs out = session.Call(job, std::vector<Tensor>{});
    REQUIRE(out[0].GetShape() == Shape{2, 5});
    for (int i = 0; i < 10; ++i) {
      CHECK(out[0].Data<std::int32_t>()[i] == stream[static_cast<std::size_t>(call * 8 + (i / 5) * 4 + i % 5)]);
      CHECK(out[1].Data<std::int32_t>()[i] == stream[static_cast<std::size_t>((call + 2) * 8 + (i / 5) * 4 + i % 5)]);
    }
  }
  CHECK(session.GetVariable("iteration").Data<std::int64_t>()[0] == 5);
}
