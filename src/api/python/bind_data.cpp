// weir._C's data helpers for weir.data.ofrecord (the tool that writes datasets) and its tests: JPEG
// encoding and decoding, image resizing and OFRecord parsing, with the kernels' own code.
#include <pybind11/numpy.h>

#include "api/python/bind.hpp"
#include "kernels/data/image.hpp"
#include "kernels/data/ofrecord.hpp"

namespace weir::python {

namespace {

namespace py = pybind11;
namespace image = internal::image;
namespace ofrecord = internal::ofrecord;

using Pixels = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

// (height, width, channels) of a (h, w) or (h, w, c) image array.
std::array<int, 3> ImageDims(const Pixels& pixels, std::string_view what) {
  if (pixels.ndim() == 2) return {static_cast<int>(pixels.shape(0)), static_cast<int>(pixels.shape(1)), 1};
  if (pixels.ndim() == 3 && (pixels.shape(2) == 1 || pixels.shape(2) == 3)) {
    return {static_cast<int>(pixels.shape(0)), static_cast<int>(pixels.shape(1)), static_cast<int>(pixels.shape(2))};
  }
  throw std::invalid_argument(fmt::format("{}: expected a (height, width) or (height, width, 1 or 3) uint8 image, got "
                                          "{} dimensions", what, pixels.ndim()));
}

py::object Values(const ofrecord::Feature& feature) {
  if (feature.kind == ofrecord::FeatureKind::kBytes) {
    py::list values;
    for (const auto bytes : ofrecord::BytesValues(feature)) {
      values.append(py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    return values;
  }
  const std::int64_t count = ofrecord::CountValues(feature);
  const auto fill = [&]<typename T>(py::array_t<T> out) {
    ofrecord::ReadValues<T>(feature, out.mutable_data(), count);
    return py::object(out);
  };
  switch (feature.kind) {
    case ofrecord::FeatureKind::kFloat: return fill(py::array_t<float>(count));
    case ofrecord::FeatureKind::kDouble: return fill(py::array_t<double>(count));
    case ofrecord::FeatureKind::kInt32: return fill(py::array_t<std::int32_t>(count));
    default: return fill(py::array_t<std::int64_t>(count));
  }
}

}  // namespace

void BindData(py::module_& m) {
  m.def(
      "encode_jpeg",
      [](const Pixels& pixels, int quality) {
        const auto [height, width, channels] = ImageDims(pixels, "encode_jpeg");
        if (quality < 1 || quality > 100) throw std::invalid_argument(fmt::format("encode_jpeg: quality must be 1..100, got {}", quality));
        const std::vector<std::uint8_t> jpeg = image::EncodeJpeg(pixels.data(), {height, width}, channels, quality);
        return py::bytes(reinterpret_cast<const char*>(jpeg.data()), jpeg.size());
      },
      py::arg("pixels"), py::arg("quality") = 95, "A JPEG of a (height, width[, 1 or 3 (RGB)]) uint8 image.");
  m.def(
      "decode_jpeg",
      [](const py::bytes& jpeg, const std::string& color_space) {
        const std::string_view bytes = jpeg;
        const image::ColorSpace space = image::ParseColorSpace(color_space, "decode_jpeg");
        std::vector<std::uint8_t> pixels;
        const image::Size size =
            image::DecodeJpeg({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, space, pixels);
        Pixels out({static_cast<py::ssize_t>(size.height), static_cast<py::ssize_t>(size.width),
                    static_cast<py::ssize_t>(image::Channels(space))});
        std::copy(pixels.begin(), pixels.end(), out.mutable_data());
        return out;
      },
      py::arg("jpeg"), py::arg("color_space") = "RGB", "The (height, width, channels) uint8 pixels of a JPEG.");
  m.def(
      "resize_image",
      [](const Pixels& pixels, int height, int width) {
        const auto [from_height, from_width, channels] = ImageDims(pixels, "resize_image");
        if (height < 1 || width < 1) throw std::invalid_argument("resize_image: height and width must be >= 1");
        Pixels out({static_cast<py::ssize_t>(height), static_cast<py::ssize_t>(width), static_cast<py::ssize_t>(channels)});
        image::Resize(pixels.data(), {from_height, from_width}, channels, out.mutable_data(), {height, width},
                      image::Interpolation::kBilinear);
        return out;
      },
      py::arg("pixels"), py::arg("height"), py::arg("width"), "A bilinear resize of a uint8 image, as flow.image.Resize does.");
  m.def(
      "parse_ofrecord",
      [](const py::bytes& record) {
        const std::string_view view = record;
        const std::span<const std::uint8_t> bytes{reinterpret_cast<const std::uint8_t*>(view.data()), view.size()};
        ofrecord::Validate(bytes);
        py::dict features;
        for (const std::string& name : ofrecord::FeatureNames(bytes)) {
          const ofrecord::Feature feature = *ofrecord::Find(bytes, name);
          features[py::str(name)] = py::make_tuple(std::string(ofrecord::Name(feature.kind)), Values(feature));
        }
        return features;
      },
      py::arg("record"),
      "{name: (kind, values)} of a serialized OFRecord: kind 'bytes_list' (a list of bytes) or 'float_list', "
      "'double_list', 'int32_list', 'int64_list' (a numpy array). Raises ValueError for a malformed record.");
  py::register_exception<ofrecord::FormatError>(m, "OFRecordFormatError", PyExc_ValueError);
  py::register_exception<image::ImageError>(m, "ImageError", PyExc_ValueError);
}

}  // namespace weir::python
