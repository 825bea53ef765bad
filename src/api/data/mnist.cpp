// MNIST for Weir: the original IDX files that `make data` fetches, or OneFlow's mnist.npz, cut into
// unshuffled batches the way OneFlow's load_mnist does (pixel / 255, remainder dropped).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "api/data/binary_file.hpp"
#include "weir/data.hpp"

namespace weir {

namespace {

namespace fs = std::filesystem;

constexpr std::array<const char*, 4> kIdxFiles = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                                   "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
constexpr const char* kNpzName = "mnist.npz";
constexpr const char* kFetchHint =
    "run `make data` in the Weir source tree to fetch MNIST (into $WEIR_DATA_DIR, default "
    "~/.cache/weir/mnist), or pass a folder holding the four IDX files or the path of a mnist.npz";

// IDX element type codes; only unsigned bytes occur in MNIST.
constexpr std::uint8_t kIdxUnsignedByte = 0x08;

std::string IdxTypeName(std::uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return fmt::format("unknown (0x{:02x})", code);
  }
}

// One split as either file format delivers it: flat pixels and labels, with names for messages.
struct SplitSource {
  std::string_view name;          // "train" or "test"
  std::string images_origin;      // file (and array) names for messages
  std::string labels_origin;
  const std::uint8_t* pixels = nullptr;
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int32_t> labels;
};

// Cuts a split into batches; the last count % batch_size examples are dropped.
MnistSplit BatchSplit(const SplitSource& source, int batch_size) {
  const auto label_count = static_cast<std::int64_t>(source.labels.size());
  if (label_count != source.count) {
    throw std::runtime_error(fmt::format("[LoadMnist] {} split: {} holds {} images but {} holds {} labels",
                                         source.name, source.images_origin, source.count, source.labels_origin,
                                         label_count));
  }
  const std::int64_t num_batches = source.count / batch_size;
  if (num_batches == 0) {
    throw std::runtime_error(fmt::format("[LoadMnist] {} split: {} holds {} examples, fewer than one batch of {}",
                                         source.name, source.images_origin, source.count, batch_size));
  }
  MnistSplit split;
  // Four bytes per pixel: a file that fits in memory may still not once it is floats.
  const std::uint64_t image_bytes = static_cast<std::uint64_t>(num_batches) * static_cast<std::uint64_t>(batch_size) *
                                    static_cast<std::uint64_t>(source.rows) * static_cast<std::uint64_t>(source.cols) *
                                    sizeof(float);
  if (image_bytes > internal::PhysicalMemoryBytes()) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: {} split: {} images of {}x{} pixels need {} bytes as floats, "
                                         "more than this machine's memory ({} bytes)",
                                         source.images_origin, source.name, num_batches * batch_size, source.rows,
                                         source.cols, image_bytes, internal::PhysicalMemoryBytes()));
  }
  split.images = Tensor(Shape{num_batches, batch_size, 1, source.rows, source.cols}, DType::kF32);
  split.labels = Tensor(Shape{num_batches, batch_size}, DType::kI32);

  // Division, not a multiply by 1/255, so values match NumPy's astype(float32) / 255 bit for bit.
  float* images = split.images.Data<float>();
  const std::uint8_t* pixels = source.pixels;
  const std::int64_t num_pixels = split.images.NumElements();
  for (std::int64_t i = 0; i < num_pixels; ++i) images[i] = static_cast<float>(pixels[i]) / 255.0f;
  std::copy_n(source.labels.begin(), split.labels.NumElements(), split.labels.Data<std::int32_t>());
  return split;
}

// ---------------------------------------------------------------------------------------------
// IDX

IdxArray ReadIdxChecked(const fs::path& path, int rank, std::string_view what) {
  IdxArray array = ReadIdx(path.string());
  if (static_cast<int>(array.dims.size()) != rank) {
    throw std::runtime_error(fmt::format(
        "[LoadMnist] {}: wrong magic number 0x{:08x} for {}: expected 0x{:08x} ({} dims), the file has {} dims {}",
        path.string(), (kIdxUnsignedByte << 8) | array.dims.size(), what, (kIdxUnsignedByte << 8) | rank, rank,
        array.dims.size(), internal::DimsText(array.dims)));
  }
  return array;
}

MnistSplit LoadIdxSplit(const fs::path& folder, std::string_view name, const char* images_file,
                        const char* labels_file, int batch_size) {
  const fs::path images_path = folder / images_file;
  const fs::path labels_path = folder / labels_file;
  const IdxArray images = ReadIdxChecked(images_path, 3, "images");
  const IdxArray labels = ReadIdxChecked(labels_path, 1, "labels");
  // Empty images would also let count * rows overflow int64 in the batch tensor's shape: an IDX
  // file of zero-width images of any count and height holds no bytes at all.
  if (images.dims[1] == 0 || images.dims[2] == 0) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: images must have shape (N, 28, 28), got {}",
                                         images_path.string(), internal::DimsText(images.dims)));
  }
  SplitSource source{name, images_path.string(), labels_path.string()};
  source.pixels = images.data.data();
  source.count = images.dims[0];
  source.rows = images.dims[1];
  source.cols = images.dims[2];
  source.labels.assign(labels.data.begin(), labels.data.end());
  return BatchSplit(source, batch_size);
}

// ---------------------------------------------------------------------------------------------
// npz

struct NpyType {
  char byte_order = '|';
  char kind = '?';
  int item_size = 0;
};

NpyType ParseNpyType(const std::string& descr) {
  NpyType type;
  if (descr.size() >= 3) {
    type.byte_order = descr[0];
    type.kind = descr[1];
    const std::string_view digits = std::string_view(descr).substr(2);
    if (digits.size() <= 2 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      type.item_size = std::atoi(std::string(digits).c_str());
    }
  }
  return type;
}

const NpyArray& Member(const std::map<std::string, NpyArray>& arrays, const std::string& path, const char* name) {
  const auto found = arrays.find(name);
  if (found == arrays.end()) {
    // The names come from the archive: a few, each cut short, keep the message readable.
    constexpr std::size_t kShownNames = 8;
    std::vector<std::string> names;
    for (const auto& [key, value] : arrays) {
      if (names.size() == kShownNames) {
        names.push_back(fmt::format("... {} arrays", arrays.size()));
        break;
      }
      names.push_back(internal::Excerpt(key, 40));
    }
    throw std::runtime_error(fmt::format("[LoadMnist] {}: no array '{}' (MNIST needs x_train, y_train, x_test, "
                                         "y_test); the archive holds [{}]",
                                         path, name, fmt::join(names, ", ")));
  }
  return found->second;
}

// Labels of any integer dtype NumPy writes (Keras' file has uint8, others int64), as int32.
std::vector<std::int32_t> LabelsAsInt32(const NpyArray& array, const std::string& origin) {
  const NpyType type = ParseNpyType(array.descr);
  const bool integer = type.kind == 'u' || type.kind == 'i';
  const int size = type.item_size;
  if (!integer || (size != 1 && size != 2 && size != 4 && size != 8)) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: unsupported dtype '{}' for labels: expected an integer "
                                         "type such as '|u1' or '<i8'",
                                         origin, array.descr));
  }
  if (array.shape.size() != 1) {
    throw std::runtime_error(
        fmt::format("[LoadMnist] {}: labels must have shape (N,), got {}", origin, internal::DimsText(array.shape)));
  }
  const bool big_endian =
      type.byte_order == '>' || (type.byte_order == '=' && std::endian::native == std::endian::big);
  const std::size_t count = static_cast<std::size_t>(array.shape[0]);
  std::vector<std::int32_t> labels(count);
  const std::uint8_t* bytes = array.data.data();
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* item = bytes + i * size;
    std::uint64_t raw = 0;
    for (int b = 0; b < size; ++b) raw |= std::uint64_t{item[big_endian ? size - 1 - b : b]} << (8 * b);
    bool fits = true;
    std::int64_t value = 0;
    if (type.kind == 'i') {
      const int unused_bits = 64 - 8 * size;  // sign-extend through an arithmetic shift
      value = static_cast<std::int64_t>(raw << unused_bits) >> unused_bits;
    } else {
      fits = raw <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
      value = static_cast<std::int64_t>(fits ? raw : 0);
    }
    fits = fits && value >= std::numeric_limits<std::int32_t>::min() &&
           value <= std::numeric_limits<std::int32_t>::max();
    if (!fits) {
      throw std::runtime_error(fmt::format("[LoadMnist] {}: label {} at index {} does not fit in int32", origin,
                                           type.kind == 'i' ? fmt::format("{}", value) : fmt::format("{}", raw), i));
    }
    labels[i] = static_cast<std::int32_t>(value);
  }
  return labels;
}

SplitSource NpzSplitSource(const std::map<std::string, NpyArray>& arrays, const std::string& path,
                           std::string_view name, const char* images_name, const char* labels_name) {
  const NpyArray& images = Member(arrays, path, images_name);
  const NpyArray& labels = Member(arrays, path, labels_name);
  SplitSource source{name, fmt::format("{} ({})", path, images_name), fmt::format("{} ({})", path, labels_name)};
  const NpyType type = ParseNpyType(images.descr);
  if (type.kind != 'u' || type.item_size != 1) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: unsupported dtype '{}' for images: expected uint8 pixels "
                                         "('|u1')",
                                         source.images_origin, images.descr));
  }
  if (images.shape.size() != 3 || images.shape[1] == 0 || images.shape[2] == 0) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: images must have shape (N, 28, 28), got {}",
                                         source.images_origin, internal::DimsText(images.shape)));
  }
  source.pixels = images.data.data();
  source.count = images.shape[0];
  source.rows = images.shape[1];
  source.cols = images.shape[2];
  source.labels = LabelsAsInt32(labels, source.labels_origin);
  return source;
}

Mnist LoadNpz(const fs::path& path, int batch_size) {
  const std::map<std::string, NpyArray> arrays = ReadNpz(path.string());
  Mnist mnist;
  mnist.train = BatchSplit(NpzSplitSource(arrays, path.string(), "train", "x_train", "y_train"), batch_size);
  mnist.test = BatchSplit(NpzSplitSource(arrays, path.string(), "test", "x_test", "y_test"), batch_size);
  return mnist;
}

fs::path DefaultDataDir() {
  const char* data_dir = std::getenv("WEIR_DATA_DIR");
  if (data_dir != nullptr && *data_dir != '\0') return data_dir;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    throw std::runtime_error(
        "[LoadMnist] neither WEIR_DATA_DIR nor HOME is set: pass the data folder (or mnist.npz) explicitly");
  }
  return fs::path(home) / ".cache" / "weir" / "mnist";
}

}  // namespace

IdxArray ReadIdx(const std::string& path) {
  internal::BinaryFile file(path, "ReadIdx");
  const auto fail = [&](const std::string& what) {
    return std::runtime_error(fmt::format("[ReadIdx] {}: {}", path, what));
  };
  if (file.Size() < 4) {
    throw fail(fmt::format("truncated header: the file has {} bytes, an IDX header has at least 8", file.Size()));
  }
  std::uint8_t magic[4];
  file.Read(magic, sizeof magic);
  const std::uint32_t magic_number = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                                     (std::uint32_t{magic[2]} << 8) | magic[3];
  if (magic[0] == 0x1f && magic[1] == 0x8b) throw fail("the file is gzip-compressed: gunzip it first");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
    throw fail(fmt::format("wrong magic number 0x{:08x}: an IDX file starts with 0x0000, a type code and a dims "
                           "count (0x00000801 for labels, 0x00000803 for images)",
                           magic_number));
  }
  if (magic[2] != kIdxUnsignedByte) {
    throw fail(fmt::format("magic number 0x{:08x} says {} elements; only unsigned bytes (0x08) are supported",
                           magic_number, IdxTypeName(magic[2])));
  }
  const int rank = magic[3];
  const std::uint64_t header_bytes = 4 + 4 * static_cast<std::uint64_t>(rank);
  if (file.Size() < header_bytes) {
    throw fail(fmt::format("truncated header: magic 0x{:08x} announces {} dims, a {}-byte header, but the file has "
                           "{} bytes",
                           magic_number, rank, header_bytes, file.Size()));
  }
  std::vector<std::uint8_t> header(header_bytes - 4);
  file.Read(header.data(), header.size());

  IdxArray array;
  array.dims.resize(rank);
  const std::uint64_t available = file.Size() - header_bytes;
  std::uint64_t payload = 1;
  bool too_large = false;  // the dims describe more bytes than any file holds
  for (int i = 0; i < rank; ++i) {
    const std::uint8_t* dim = header.data() + 4 * i;
    array.dims[i] = (std::int64_t{dim[0]} << 24) | (std::int64_t{dim[1]} << 16) | (std::int64_t{dim[2]} << 8) | dim[3];
    const auto extent = static_cast<std::uint64_t>(array.dims[i]);
    if (extent != 0 && payload > std::numeric_limits<std::uint64_t>::max() / extent) too_large = true;
    else payload *= extent;
  }
  if (payload == 0) too_large = false;  // a zero dim empties the array whatever the others say
  if (too_large || payload > available) {
    throw fail(fmt::format("truncated payload: dims {} need {} bytes after the {}-byte header, {} follow",
                           internal::DimsText(array.dims),
                           too_large ? std::string("more than 2^64") : fmt::format("{}", payload),
                           header_bytes, available));
  }
  if (payload < available) {
    throw fail(fmt::format("{} unexpected bytes after the payload: dims {} need {} bytes after the {}-byte header, "
                           "{} follow",
                           available - payload, internal::DimsText(array.dims), payload, header_bytes, available));
  }
  // The payload matches the file's size, but a sparse file's size costs no disk.
  if (payload > internal::PhysicalMemoryBytes()) {
    throw fail(fmt::format("dims {} need {} bytes, more than this machine's memory ({} bytes)",
                           internal::DimsText(array.dims), payload, internal::PhysicalMemoryBytes()));
  }
  array.data.resize(payload);
  file.Read(array.data.data(), payload);
  return array;
}

Mnist LoadMnist(int batch_size, std::string data_dir) {
  if (batch_size <= 0) {
    throw std::invalid_argument(fmt::format("[LoadMnist] batch_size must be positive, got {}", batch_size));
  }
  const fs::path location = data_dir.empty() ? DefaultDataDir() : fs::path(data_dir);
  std::error_code error;
  const fs::file_status status = fs::status(location, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    throw std::runtime_error(fmt::format("[LoadMnist] {}: cannot access: {}", location.string(), error.message()));
  }

  if (fs::is_regular_file(status)) {
    if (location.extension() != ".npz") {
      throw std::runtime_error(fmt::format("[LoadMnist] {}: expected a folder holding the four MNIST IDX files or a "
                                           ".npz file, got another file",
                                           location.string()));
    }
    return LoadNpz(location, batch_size);
  }
  if (!fs::is_directory(status)) {
    throw std::runtime_error(fmt::format("[LoadMnist] {} does not exist: {}", location.string(), kFetchHint));
  }

  std::vector<std::string> missing;
  for (const char* file : kIdxFiles) {
    if (!fs::exists(location / file, error)) missing.emplace_back(file);
  }
  if (!missing.empty()) {
    // OneFlow keeps mnist.npz in its data folder; take it when the IDX files are not there at all.
    if (missing.size() == kIdxFiles.size() && fs::is_regular_file(location / kNpzName, error)) {
      return LoadNpz(location / kNpzName, batch_size);
    }
    throw std::runtime_error(fmt::format("[LoadMnist] {} lacks {}: {}", location.string(), fmt::join(missing, ", "),
                                         kFetchHint));
  }
  Mnist mnist;
  mnist.train = LoadIdxSplit(location, "train", kIdxFiles[0], kIdxFiles[1], batch_size);
  mnist.test = LoadIdxSplit(location, "test", kIdxFiles[2], kIdxFiles[3], batch_size);
  return mnist;
}

}  // namespace weir
