// MNIST loading: IDX files and .npz archives (stored, deflated, zip64) written here, batching and
// scaling, every kind of bad file, and the real data set when `make data` has fetched it.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/archive_bytes.hpp"
#include "scratch_dir.hpp"
#include "weir/data.hpp"

using namespace weir;
namespace fs = std::filesystem;

namespace {

using namespace weir::testing;

// doctest's strings do not convert from std::string.
doctest::Contains Has(const std::string& text) { return doctest::Contains(text.c_str()); }

using TempDir = weir::testing::ScratchDir;

// Sets an environment variable for one scope and restores the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

Bytes Idx(const std::vector<std::uint32_t>& dims, const Bytes& payload, std::uint8_t type = 0x08) {
  Bytes out = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t dim : dims) PutBig32(out, dim);
  Append(out, payload);
  return out;
}

// Deterministic pixels covering 0..255, and labels 0..9.
Bytes Pixels(std::size_t count, int seed) {
  Bytes pixels(count);
  for (std::size_t i = 0; i < count; ++i) pixels[i] = static_cast<std::uint8_t>((i * 37 + seed * 11) % 256);
  return pixels;
}
Bytes Labels(std::size_t count, int seed) {
  Bytes labels(count);
  for (std::size_t i = 0; i < count; ++i) labels[i] = static_cast<std::uint8_t>((i * 3 + seed) % 10);
  return labels;
}

constexpr int kRows = 28;
constexpr int kCols = 28;
constexpr std::size_t kImageBytes = kRows * kCols;
constexpr std::size_t kTrainCount = 7;
constexpr std::size_t kTestCount = 5;

// A folder with the four IDX files: 7 training and 5 test examples.
void WriteIdxFolder(const TempDir& dir) {
  WriteBytes(dir / "train-images-idx3-ubyte", Idx({kTrainCount, kRows, kCols}, Pixels(kTrainCount * kImageBytes, 1)));
  WriteBytes(dir / "train-labels-idx1-ubyte", Idx({kTrainCount}, Labels(kTrainCount, 1)));
  WriteBytes(dir / "t10k-images-idx3-ubyte", Idx({kTestCount, kRows, kCols}, Pixels(kTestCount * kImageBytes, 2)));
  WriteBytes(dir / "t10k-labels-idx1-ubyte", Idx({kTestCount}, Labels(kTestCount, 2)));
}

// A version 1.0 .npy file: magic, header padded with spaces to a multiple of 64, data.
Bytes Npy(const std::string& descr, const std::vector<std::uint64_t>& shape, const Bytes& data,
          const std::string& fortran_order = "False") {
  std::string dims;
  for (std::uint64_t dim : shape) dims += fmt::format("{}, ", dim);
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  else if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': ({}), }}", descr, fortran_order, dims);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  PutLittle(out, header.size(), 2);
  out.insert(out.end(), header.begin(), header.end());
  Append(out, data);
  return out;
}


// Labels 0..9 as little-endian int64, Keras-style uint8, or big-endian int32.
Bytes LabelsAs(const Bytes& labels, int item_size, bool big_endian) {
  Bytes out;
  for (std::uint8_t label : labels) {
    for (int b = 0; b < item_size; ++b) {
      const int shift = 8 * (big_endian ? item_size - 1 - b : b);
      out.push_back(static_cast<std::uint8_t>(shift < 8 ? label >> shift : 0));
    }
  }
  return out;
}

// mnist.npz with the same examples as WriteIdxFolder.
Bytes MnistNpz(ZipKind kind, const std::string& label_descr = "|u1") {
  const int item_size = label_descr[2] - '0';
  const bool big_endian = label_descr[0] == '>';
  return Zip({{"x_train.npy", Npy("|u1", {kTrainCount, kRows, kCols}, Pixels(kTrainCount * kImageBytes, 1))},
              {"y_train.npy", Npy(label_descr, {kTrainCount}, LabelsAs(Labels(kTrainCount, 1), item_size, big_endian))},
              {"x_test.npy", Npy("|u1", {kTestCount, kRows, kCols}, Pixels(kTestCount * kImageBytes, 2))},
              {"y_test.npy", Npy(label_descr, {kTestCount}, LabelsAs(Labels(kTestCount, 2), item_size, big_endian))}},
             kind).bytes;
}

// Checks a split against Pixels(seed) and Labels(seed) cut into batches.
void CheckSplit(const MnistSplit& split, std::int64_t batches, int batch_size, int seed) {
  REQUIRE(split.images.GetDType() == DType::kF32);
  REQUIRE(split.labels.GetDType() == DType::kI32);
  REQUIRE(split.images.GetShape() == Shape{batches, batch_size, 1, kRows, kCols});
  REQUIRE(split.labels.GetShape() == Shape{batches, batch_size});
  const std::size_t kept = static_cast<std::size_t>(batches * batch_size);
  const Bytes pixels = Pixels(kept * kImageBytes, seed);
  const Bytes labels = Labels(kept, seed);
  const float* images = split.images.Data<float>();
  bool pixels_match = true;
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels_match = pixels_match && images[i] == pixels[i] / 255.0f;
  CHECK(pixels_match);
  const std::vector<std::int32_t> got = split.labels.ToVector<std::int32_t>();
  CHECK(got == std::vector<std::int32_t>(labels.begin(), labels.end()));
}

void CheckSmallMnist(const Mnist& mnist, int batch_size) {
  CheckSplit(mnist.train, kTrainCount / batch_size, batch_size, 1);
  CheckSplit(mnist.test, kTestCount / batch_size, batch_size, 2);
}

// Every prefix of a valid file is invalid; reading one must throw std::runtime_error.
template <typename ReadFn> void CheckEveryPrefixFails(const TempDir& dir, const Bytes& bytes, const ReadFn& read) {
  const std::string path = dir / "prefix.bin";
  std::size_t failures = 0;
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    WriteBytes(path, Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)));
    try {
      read(path);
    } catch (const std::runtime_error&) {
      ++failures;
    }
  }
  CHECK(failures == bytes.size());
}

// Random byte changes must give a result or std::runtime_error; anything else (a crash, another
// exception, a sanitizer report) fails.
template <typename ReadFn> void CheckCorruptionsAreSafe(const TempDir& dir, const Bytes& bytes, const ReadFn& read) {
  std::mt19937 random(1234);
  const std::string path = dir / "corrupt.bin";
  int rejected = 0;
  constexpr int kTrials = 400;
  for (int trial = 0; trial < kTrials; ++trial) {
    Bytes corrupt = bytes;
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int c = 0; c < changes; ++c) {
      corrupt[random() % corrupt.size()] = static_cast<std::uint8_t>(random());
    }
    WriteBytes(path, corrupt);
    try {
      read(path);
    } catch (const std::runtime_error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
}

}  // namespace

TEST_CASE("ReadIdx returns the dims and bytes of label and image files") {
  TempDir dir;
  WriteBytes(dir / "labels", Idx({4}, {5, 0, 4, 1}));
  const IdxArray labels = ReadIdx(dir / "labels");
  CHECK(labels.dims == std::vector<std::int64_t>{4});
  CHECK(labels.data == Bytes{5, 0, 4, 1});

  WriteBytes(dir / "images", Idx({2, 2, 3}, {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255}));
  const IdxArray images = ReadIdx(dir / "images");
  CHECK(images.dims == std::vector<std::int64_t>{2, 2, 3});
  CHECK(images.data.size() == 12);
  CHECK(images.data.back() == 255);

  WriteBytes(dir / "empty", Idx({0, 28, 28}, {}));
  CHECK(ReadIdx(dir / "empty").dims == std::vector<std::int64_t>{0, 28, 28});
}

TEST_CASE("LoadMnist cuts IDX files into batches, drops the remainder and scales by 1/255") {
  TempDir dir;
  WriteIdxFolder(dir);
  for (int batch_size : {1, 2, 3, 5}) {
    CAPTURE(batch_size);
    CheckSmallMnist(LoadMnist(batch_size, dir.Path().string()), batch_size);
  }
  const Mnist mnist = LoadMnist(3, dir.Path().string());
  CHECK(mnist.train.images.GetShape() == Shape{2, 3, 1, 28, 28});  // 7 examples: one dropped
  CHECK(mnist.test.images.GetShape() == Shape{1, 3, 1, 28, 28});   // 5 examples: two dropped
  // Pixel i is (i * 37 + 11) % 256: 11, 48, 85, ... and pixel 7 is 4; 255 maps to exactly 1.
  const float* images = mnist.train.images.Data<float>();
  CHECK(images[0] == 11.0f / 255.0f);
  CHECK(images[1] == 48.0f / 255.0f);
  float low = 1;
  float high = 0;
  for (std::int64_t i = 0; i < mnist.train.images.NumElements(); ++i) {
    low = std::min(low, images[i]);
    high = std::max(high, images[i]);
  }
  CHECK(low == 0.0f);
  CHECK(high == 1.0f);
  CHECK(mnist.train.labels.ToVector<std::int32_t>() == std::vector<std::int32_t>{1, 4, 7, 0, 3, 6});
}

TEST_CASE("LoadMnist rejects batch sizes that are not positive or exceed a split") {
  TempDir dir;
  WriteIdxFolder(dir);
  CHECK_THROWS_WITH_AS(LoadMnist(0, dir.Path().string()), "[LoadMnist] batch_size must be positive, got 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(LoadMnist(-100, dir.Path().string()), std::invalid_argument);
  CHECK_THROWS_WITH_AS(LoadMnist(6, dir.Path().string()),
                       Has("test split: " + (dir / "t10k-images-idx3-ubyte") +
                                         " holds 5 examples, fewer than one batch of 6"),
                       std::runtime_error);
}

TEST_CASE("LoadMnist finds the data in WEIR_DATA_DIR, else in ~/.cache/weir/mnist") {
  TempDir dir;
  WriteIdxFolder(dir);
  {
    ScopedEnv data_dir("WEIR_DATA_DIR", dir.Path().string());
    CheckSmallMnist(LoadMnist(2), 2);
  }
  TempDir home;
  fs::create_directories(home.Path() / ".cache" / "weir");
  fs::copy(dir.Path(), home.Path() / ".cache" / "weir" / "mnist");
  {
    ScopedEnv data_dir("WEIR_DATA_DIR", std::nullopt);
    ScopedEnv home_dir("HOME", home.Path().string());
    CheckSmallMnist(LoadMnist(2), 2);
  }
  {
    ScopedEnv data_dir("WEIR_DATA_DIR", std::nullopt);
    ScopedEnv home_dir("HOME", std::nullopt);
    CHECK_THROWS_WITH_AS(LoadMnist(2), Has("neither WEIR_DATA_DIR nor HOME is set"), std::runtime_error);
  }
}

TEST_CASE("missing data tells the user to run make data") {
  TempDir dir;
  const std::string absent = dir / "absent";
  CHECK_THROWS_WITH_AS(LoadMnist(100, absent), Has("[LoadMnist] " + absent + " does not exist: run `make data`"),
                       std::runtime_error);
  {
    ScopedEnv data_dir("WEIR_DATA_DIR", absent);
    CHECK_THROWS_WITH_AS(LoadMnist(100), Has("make data"), std::runtime_error);
  }
  WriteIdxFolder(dir);
  fs::remove(dir.Path() / "t10k-labels-idx1-ubyte");
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir.Path().string()),
                       Has("lacks t10k-labels-idx1-ubyte: run `make data`"), std::runtime_error);
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir / "absent.npz"), Has("does not exist: run `make data`"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir / "train-images-idx3-ubyte"),
                       Has("expected a folder holding the four MNIST IDX files or a .npz file"),
                       std::runtime_error);
}

TEST_CASE("LoadMnist reads OneFlow's mnist.npz: stored, deflated and zip64 archives") {
  TempDir dir;
  for (ZipKind kind : {ZipKind::kStored, ZipKind::kDeflate, ZipKind::kZip64}) {
    for (const char* label_descr : {"|u1", "<i8", ">i4", "<u2"}) {
      CAPTURE(static_cast<int>(kind));
      CAPTURE(label_descr);
      WriteBytes(dir / "mnist.npz", MnistNpz(kind, label_descr));
      CheckSmallMnist(LoadMnist(3, dir / "mnist.npz"), 3);
    }
  }
  const Bytes deflated = MnistNpz(ZipKind::kDeflate);
  CHECK(deflated.size() < MnistNpz(ZipKind::kStored).size() / 2);
  // A folder without the IDX files but with mnist.npz, as OneFlow's data folder has it.
  CheckSmallMnist(LoadMnist(2, dir.Path().string()), 2);
}

TEST_CASE("ReadNpz returns every array with its dtype, shape and bytes") {
  TempDir dir;
  const Bytes floats = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64};  // 1, 2, 3 as <f4
  for (ZipKind kind : {ZipKind::kStored, ZipKind::kDeflate, ZipKind::kZip64}) {
    WriteBytes(dir / "arrays.npz", Zip({{"weights.npy", Npy("<f4", {3}, floats)},
                                       {"scalar.npy", Npy("<i8", {}, {42, 0, 0, 0, 0, 0, 0, 0})},
                                       {"empty.npy", Npy("|b1", {0, 4}, {})},
                                       {"zeros.npy", Npy("|u1", {300000}, Bytes(300000, 0))},
                                       {"notes.txt", {'h', 'i'}}},
                                      kind).bytes);
    const std::map<std::string, NpyArray> arrays = ReadNpz(dir / "arrays.npz");
    REQUIRE(arrays.size() == 4);
    // Deflates about 1000:1, past the inflater's first buffer, which must grow.
    CHECK(arrays.at("zeros").data == Bytes(300000, 0));
    CHECK(arrays.at("weights").descr == "<f4");
    CHECK(arrays.at("weights").shape == std::vector<std::int64_t>{3});
    CHECK(arrays.at("weights").data == floats);
    CHECK(arrays.at("scalar").shape.empty());
    CHECK(arrays.at("scalar").data.size() == 8);
    CHECK(arrays.at("empty").shape == std::vector<std::int64_t>{0, 4});
    CHECK(arrays.at("empty").data.empty());
  }
}

TEST_CASE("bad IDX files give errors that name the file and the problem") {
  TempDir dir;
  WriteIdxFolder(dir);
  const std::string images = dir / "train-images-idx3-ubyte";
  const std::string labels = dir / "train-labels-idx1-ubyte";
  const Bytes pixels = Pixels(kTrainCount * kImageBytes, 1);

  WriteBytes(images, {0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 9});
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("[ReadIdx] " + images + ": wrong magic number 0x12345678"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir.Path().string()), Has("wrong magic number 0x12345678"),
                       std::runtime_error);
  WriteBytes(images, {0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("gzip-compressed: gunzip it first"), std::runtime_error);
  WriteBytes(images, Idx({1, 2}, {0, 0, 0, 0, 0, 0, 0, 0}, 0x0C));
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("magic number 0x00000c02 says int elements"),
                       std::runtime_error);

  // Labels where images belong: the magic number says 1 dim, images need 3.
  WriteBytes(images, Idx({kTrainCount}, Labels(kTrainCount, 1)));
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir.Path().string()),
                       Has(images + ": wrong magic number 0x00000801 for images: expected 0x00000803"),
                       std::runtime_error);

  WriteBytes(images, {0, 0});
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("truncated header: the file has 2 bytes"), std::runtime_error);
  WriteBytes(images, {0, 0, 8, 3, 0, 0, 0, 7, 0, 0});
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("truncated header: magic 0x00000803 announces 3 dims, a "
                                                          "16-byte header, but the file has 10 bytes"),
                       std::runtime_error);

  Bytes short_payload = Idx({kTrainCount, kRows, kCols}, pixels);
  short_payload.pop_back();
  WriteBytes(images, short_payload);
  CHECK_THROWS_WITH_AS(ReadIdx(images),
                       ("[ReadIdx] " + images + ": truncated payload: dims (7,28,28) need 5488 bytes after the "
                                                "16-byte header, 5487 follow")
                           .c_str(),
                       std::runtime_error);
  Bytes long_payload = Idx({kTrainCount, kRows, kCols}, pixels);
  long_payload.push_back(0);
  WriteBytes(images, long_payload);
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("1 unexpected bytes after the payload"), std::runtime_error);
  // Dims whose product overflows 64 bits must not wrap around to a small size.
  WriteBytes(images, Idx({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1, 2, 3}));
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("need more than 2^64 bytes"), std::runtime_error);
  WriteBytes(images, Idx({0x10000, 0x10000, 0x10000, 0x10000}, {}));
  CHECK_THROWS_WITH_AS(ReadIdx(images), Has("need more than 2^64 bytes"), std::runtime_error);

  // Counts that disagree between images and labels.
  WriteBytes(images, Idx({kTrainCount, kRows, kCols}, pixels));
  WriteBytes(labels, Idx({kTrainCount - 1}, Labels(kTrainCount - 1, 1)));
  CHECK_THROWS_WITH_AS(LoadMnist(1, dir.Path().string()),
                       ("[LoadMnist] train split: " + images + " holds 7 images but " + labels + " holds 6 labels")
                           .c_str(),
                       std::runtime_error);

  CHECK_THROWS_WITH_AS(ReadIdx(dir / "nothing"), Has("cannot open: No such file or directory"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(ReadIdx(dir.Path().string()), Has("is a folder, not a file"), std::runtime_error);

  const Bytes valid = Idx({3, 4, 4}, Pixels(48, 3));
  CheckEveryPrefixFails(dir, valid, [](const std::string& path) { ReadIdx(path); });
  CheckCorruptionsAreSafe(dir, valid, [](const std::string& path) { ReadIdx(path); });
}

TEST_CASE("bad npz archives give errors that name the file and the problem") {
  TempDir dir;
  const std::string path = dir / "mnist.npz";
  const auto load = [&] { return LoadMnist(1, path); };

  WriteBytes(path, Idx({3}, {1, 2, 3}));
  CHECK_THROWS_WITH_AS(load(), Has("[ReadNpz] " + path + ": not a zip archive (an .npz)"),
                       std::runtime_error);
  WriteBytes(path, {});
  CHECK_THROWS_WITH_AS(load(), Has("not a zip archive (an .npz): the file has 0 bytes"),
                       std::runtime_error);
  const Bytes whole = MnistNpz(ZipKind::kDeflate);
  WriteBytes(path, Bytes(whole.begin(), whole.begin() + 500));
  CHECK_THROWS_WITH_AS(load(), Has("truncated or corrupt zip: it starts like a zip archive but has no end"),
                       std::runtime_error);
  WriteBytes(path, Npy("|u1", {40}, Bytes(40, 7)));
  CHECK_THROWS_WITH_AS(load(), Has("a single .npy file, not an .npz archive"), std::runtime_error);

  // A flipped byte in a stored member: the CRC catches it.
  Bytes stored = MnistNpz(ZipKind::kStored);
  stored[1000] ^= 0x40;
  WriteBytes(path, stored);
  CHECK_THROWS_WITH_AS(load(), Has("member 'x_train.npy' is corrupt: CRC-32"), std::runtime_error);

  // A broken DEFLATE stream: block type 3 does not exist.
  Bytes deflated = MnistNpz(ZipKind::kDeflate);
  deflated[30 + std::string("x_train.npy").size()] = 0xFF;
  WriteBytes(path, deflated);
  CHECK_THROWS_WITH_AS(load(), Has("member 'x_train.npy' does not inflate"), std::runtime_error);

  // Sizes in the central directory that disagree with the DEFLATE stream.
  const auto with_sizes = [&](int compressed_change, int size_change) {
    Bytes archive = MnistNpz(ZipKind::kDeflate);
    const Bytes signature = {0x50, 0x4b, 0x01, 0x02};
    const auto entry = std::search(archive.begin(), archive.end(), signature.begin(), signature.end());
    for (auto [offset, change] : {std::pair{20, compressed_change}, std::pair{24, size_change}}) {
      std::uint32_t value = 0;
      for (int b = 0; b < 4; ++b) value |= std::uint32_t{entry[offset + b]} << (8 * b);
      value += static_cast<std::uint32_t>(change);
      for (int b = 0; b < 4; ++b) entry[offset + b] = static_cast<std::uint8_t>(value >> (8 * b));
    }
    WriteBytes(path, archive);
  };
  with_sizes(0, -1);
  CHECK_THROWS_WITH_AS(load(), Has("'x_train.npy' does not inflate: it holds more data than the archive says"),
                       std::runtime_error);
  with_sizes(0, 1);
  CHECK_THROWS_WITH_AS(load(), Has("'x_train.npy' inflates to 5616 bytes, the archive says 5617"), std::runtime_error);
  with_sizes(0, 100000);  // grows the buffer past what the data fills
  CHECK_THROWS_WITH_AS(load(), Has("'x_train.npy' inflates to 5616 bytes, the archive says 105616"),
                       std::runtime_error);
  with_sizes(0, 100000000);  // more than DEFLATE can expand these bytes
  CHECK_THROWS_WITH_AS(load(), Has("corrupt zip: member 'x_train.npy' claims 100005616 bytes from"),
                       std::runtime_error);
  with_sizes(-20, 0);
  CHECK_THROWS_WITH_AS(load(), Has("'x_train.npy' does not inflate"), std::runtime_error);

  // Compression method 12 (bzip2) in the central directory, and the encryption flag.
  Bytes bzip2 = MnistNpz(ZipKind::kStored);
  Bytes encrypted = bzip2;
  const Bytes signature = {0x50, 0x4b, 0x01, 0x02};
  const auto directory = std::search(bzip2.begin(), bzip2.end(), signature.begin(), signature.end()) - bzip2.begin();
  bzip2[directory + 10] = 12;
  WriteBytes(path, bzip2);
  CHECK_THROWS_WITH_AS(load(), Has("uses compression method 12; only stored (0) and deflate (8)"),
                       std::runtime_error);
  encrypted[directory + 8] = 1;
  WriteBytes(path, encrypted);
  CHECK_THROWS_WITH_AS(load(), Has("member 'x_train.npy' is encrypted"), std::runtime_error);

  const auto write_npz = [&](const std::vector<ZipMember>& members) {
    WriteBytes(path, Zip(members, ZipKind::kStored).bytes);
  };
  const Bytes pixels = Pixels(2 * kImageBytes, 1);
  const ZipMember x_train{"x_train.npy", Npy("|u1", {2, kRows, kCols}, pixels)};
  const ZipMember y_train{"y_train.npy", Npy("|u1", {2}, {3, 4})};
  const ZipMember x_test{"x_test.npy", Npy("|u1", {2, kRows, kCols}, pixels)};
  const ZipMember y_test{"y_test.npy", Npy("|u1", {2}, {5, 6})};
  write_npz({x_train, y_train, x_test, y_test});
  CHECK(LoadMnist(2, path).test.labels.ToVector<std::int32_t>() == std::vector<std::int32_t>{5, 6});

  write_npz({x_train, y_train, x_test});
  CHECK_THROWS_WITH_AS(load(), Has("no array 'y_test'"), std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("|u1", {3}, {5, 6, 7})}});
  CHECK_THROWS_WITH_AS(load(), Has("test split: " + path + " (x_test) holds 2 images but " + path +
                                                 " (y_test) holds 3 labels"),
                       std::runtime_error);
  write_npz({x_train, y_train, {"x_test.npy", Npy("<f4", {1, 1, 1}, {0, 0, 0, 0})}, y_test});
  CHECK_THROWS_WITH_AS(load(), Has("unsupported dtype '<f4' for images"), std::runtime_error);
  write_npz({x_train, y_train, {"x_test.npy", Npy("|u1", {2, 784}, pixels)}, y_test});
  CHECK_THROWS_WITH_AS(load(), Has("images must have shape (N, 28, 28), got (2,784)"), std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("<f8", {1}, Bytes(8, 0))}});
  CHECK_THROWS_WITH_AS(load(), Has("unsupported dtype '<f8' for labels"), std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("<i8", {2}, LabelsAs({5, 6}, 8, false))}});
  CHECK(LoadMnist(2, path).test.labels.ToVector<std::int32_t>() == std::vector<std::int32_t>{5, 6});
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("<u8", {1}, {0, 0, 0, 0, 0, 0, 0, 0x80})}});
  CHECK_THROWS_WITH_AS(load(), Has("label 9223372036854775808 at index 0 does not fit in int32"),
                       std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("|O", {2}, Bytes(16, 0))}});
  CHECK_THROWS_WITH_AS(load(), Has("member 'y_test.npy': unsupported npy dtype '|O'"), std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("|u1", {2, 2}, {1, 2, 3, 4}, "True")}});
  CHECK_THROWS_WITH_AS(load(), Has("Fortran-order arrays (shape (2,2)) are not supported"),
                       std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", Npy("|u1", {3}, {1, 2})}});
  CHECK_THROWS_WITH_AS(load(), Has("truncated data: shape (3) of '|u1' needs 3 data bytes, the member has 2"),
                       std::runtime_error);
  write_npz({x_train, y_train, x_test,
             {"y_test.npy", Npy("|u1", {0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFull}, {1, 2})}});
  CHECK_THROWS_WITH_AS(load(), Has("needs more than 2^64 data bytes"), std::runtime_error);
  Bytes bad_header = Npy("|u1", {2}, {5, 6});
  bad_header[12] = '[';  // "{'descr'" becomes "{'[escr'"
  write_npz({x_train, y_train, x_test, {"y_test.npy", bad_header}});
  CHECK_THROWS_WITH_AS(load(), Has("member 'y_test.npy': malformed .npy header"), std::runtime_error);
  write_npz({x_train, y_train, x_test, {"y_test.npy", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xFF, 0xFF, '{'}}});
  CHECK_THROWS_WITH_AS(load(), Has("truncated .npy header: it announces 65535 bytes, 1 follow"),
                       std::runtime_error);

  for (ZipKind kind : {ZipKind::kStored, ZipKind::kDeflate, ZipKind::kZip64}) {
    CAPTURE(static_cast<int>(kind));
    const Bytes valid = Zip({{"y.npy", Npy("|u1", {4}, {1, 2, 3, 4})}, {"x.npy", Npy("<i4", {2}, Bytes(8, 1))}}, kind).bytes;
    CheckEveryPrefixFails(dir, valid, [](const std::string& file) { ReadNpz(file); });
    CheckCorruptionsAreSafe(dir, valid, [](const std::string& file) { ReadNpz(file); });
  }
}

namespace {

// The folder `make data` fills, when it holds all four files.
std::string RealDataDir() {
  const char* env = std::getenv("WEIR_DATA_DIR");
  const char* home = std::getenv("HOME");
  fs::path dir;
  if (env != nullptr && *env != '\0') dir = env;
  else if (home != nullptr && *home != '\0') dir = fs::path(home) / ".cache" / "weir" / "mnist";
  else return "";
  for (const char* file : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    std::error_code ignored;
    if (!fs::is_regular_file(dir / file, ignored)) return "";
  }
  return dir.string();
}

std::array<std::int64_t, 10> LabelCounts(const Tensor& labels) {
  std::array<std::int64_t, 10> counts{};
  std::int64_t out_of_range = 0;
  for (std::int32_t label : labels.ToVector<std::int32_t>()) {
    if (label >= 0 && label < 10) ++counts[static_cast<std::size_t>(label)];
    else ++out_of_range;
  }
  CHECK(out_of_range == 0);
  return counts;
}

}  // namespace

TEST_CASE("the real MNIST from make data" * doctest::skip(RealDataDir().empty())) {
  const Mnist mnist = LoadMnist(100, RealDataDir());
  CHECK(mnist.train.images.GetShape() == Shape{600, 100, 1, 28, 28});
  CHECK(mnist.train.labels.GetShape() == Shape{600, 100});
  CHECK(mnist.test.images.GetShape() == Shape{100, 100, 1, 28, 28});
  CHECK(mnist.test.labels.GetShape() == Shape{100, 100});

  const std::vector<std::int32_t> labels = mnist.train.labels.ToVector<std::int32_t>();
  CHECK(std::vector<std::int32_t>(labels.begin(), labels.begin() + 10) ==
        std::vector<std::int32_t>{5, 0, 4, 1, 9, 2, 1, 3, 1, 4});
  CHECK(LabelCounts(mnist.train.labels) ==
        std::array<std::int64_t, 10>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949});
  CHECK(LabelCounts(mnist.test.labels) ==
        std::array<std::int64_t, 10>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009});

  const float* pixels = mnist.train.images.Data<float>();
  double sum = 0;
  double sum_of_squares = 0;
  const std::int64_t count = mnist.train.images.NumElements();
  for (std::int64_t i = 0; i < count; ++i) {
    sum += pixels[i];
    sum_of_squares += double{pixels[i]} * pixels[i];
  }
  const double mean = sum / static_cast<double>(count);
  const double deviation = std::sqrt(sum_of_squares / static_cast<double>(count) - mean * mean);
  CHECK(mean == doctest::Approx(0.1307).epsilon(0.001));
  CHECK(deviation == doctest::Approx(0.3081).epsilon(0.001));

  // A batch size that does not divide 60,000: the last 4,000 training examples are dropped.
  const Mnist odd = LoadMnist(7000, RealDataDir());
  CHECK(odd.train.images.GetShape() == Shape{8, 7000, 1, 28, 28});
  CHECK(odd.test.labels.GetShape() == Shape{1, 7000});
}
