// Seeded random-mutation fuzzing of every reader of files a user may get from anywhere: MNIST IDX
// files (ReadIdx, LoadMnist), .npy arrays inside .npz archives and the zip structure around them
// (ReadNpz, LoadMnist) and checkpoints in OneFlow's layout (LoadCheckpoint). Each call on a mutated
// file must return a result consistent with the file's size, or throw std::runtime_error or
// std::invalid_argument naming the file, without growing the peak RSS by more than 256 MB.
// A failure prints the seed, the iteration and the mutation, and keeps the input under the temp
// folder; WEIR_FUZZ_SEED=<n> picks another seed, WEIR_FUZZ_SCALE=<n> runs n times as many trials and
// WEIR_FUZZ_VERBOSE=1 prints how many inputs each loop saw accepted and rejected.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include <fmt/format.h>

#include "api/archive_bytes.hpp"
#include "scratch_dir.hpp"
#include "weir/checkpoint.hpp"
#include "weir/data.hpp"

using namespace weir;
namespace fs = std::filesystem;

namespace {

using namespace weir::testing;

// The seed every test name shows; each loop adds its own offset so loops do not share a stream.
constexpr std::uint32_t kDefaultSeed = 20261201;
// A reader call may grow the peak RSS by this much at most, whatever the file says.
constexpr std::int64_t kMaxRssGrowthKb = std::int64_t{256} << 10;
// DEFLATE expands at most about 1032:1; a reader may return that much per byte of an archive.
constexpr std::uint64_t kMaxInflateRatio = 1032;
constexpr std::uint64_t kTwoTo40 = std::uint64_t{1} << 40;
// An error message may be this much longer than the path it names.
constexpr std::size_t kMaxMessageBytes = 1000;

std::uint32_t Seed(std::uint32_t offset) {
  const char* text = std::getenv("WEIR_FUZZ_SEED");
  const std::uint32_t base =
      text != nullptr && *text != '\0' ? static_cast<std::uint32_t>(std::strtoul(text, nullptr, 10)) : kDefaultSeed;
  return base + offset;
}

int Trials(int base) {
  const char* text = std::getenv("WEIR_FUZZ_SCALE");
  const int scale = text != nullptr && *text != '\0' ? std::max(1, std::atoi(text)) : 1;
  return base * scale;
}

void WriteText(const fs::path& path, const std::string& text) { WriteBytes(path, Bytes(text.begin(), text.end())); }

Bytes ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A file of `size` bytes whose first bytes are `head` and the rest a hole: it claims terabytes
// without taking any disk.
void WriteSparse(const fs::path& path, const Bytes& head, std::uint64_t size) {
  WriteBytes(path, head);
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size)) == 0);
}


// ---------------------------------------------------------------------------------------------
// Peak RSS: VmHWM, reset before each call (writing 5 to clear_refs, Linux 4.0+) so that a call's
// growth is measured on its own. Where the reset is refused the growth is still an upper bound.

std::int64_t StatusKb(std::string_view key) {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buffer[8192];
  const ssize_t got = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (got <= 0) return 0;
  const std::string_view text(buffer, static_cast<std::size_t>(got));
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return 0;
  return std::strtoll(buffer + at + key.size() + 1, nullptr, 10);
}

std::int64_t PeakRssKb() { return StatusKb("VmHWM"); }

void ResetPeakRss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = ::write(fd, "5", 1);
  ::close(fd);
}

// ---------------------------------------------------------------------------------------------
// The fuzz driver: runs a reader call, judges it and reports failures with what reproduces them.

// Keeps a failing input (a file or a checkpoint folder) beside the scratch folder; returns where.
std::string KeepInput(const fs::path& input) {
  static std::atomic<int> counter{0};
  const fs::path kept = fs::temp_directory_path() / fmt::format("weir_fuzz_failure-{}-{}", ::getpid(), counter++);
  std::error_code error;
  fs::remove_all(kept, error);
  fs::copy(input, kept, fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
  return error ? fmt::format("(not kept: {})", error.message()) : kept.string();
}

class Fuzz {
 public:
  Fuzz(std::string name, std::uint32_t seed) : name_(std::move(name)), seed_(seed), random_(seed) {}
  ~Fuzz() {
    CHECK_MESSAGE(failures_ == 0, name_, ": ", failures_, " failing inputs (seed ", seed_, ")");
    if (std::getenv("WEIR_FUZZ_VERBOSE") != nullptr) {
      fmt::print("{} (seed {}): {} inputs accepted, {} rejected, {} failed\n", name_, seed_, accepted_, rejected_,
                 failures_);
    }
  }
  Fuzz(const Fuzz&) = delete;
  Fuzz& operator=(const Fuzz&) = delete;

  std::mt19937& Random() { return random_; }
  // Uniform enough in [0, bound) for the small bounds used here; 0 when bound is 0.
  std::size_t Below(std::size_t bound) { return bound == 0 ? 0 : random_() % bound; }
  bool OneIn(std::size_t n) { return Below(n) == 0; }
  std::uint64_t Random64() { return (std::uint64_t{random_()} << 32) | random_(); }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(items.size())];
  }

  int Accepted() const { return accepted_; }
  int Rejected() const { return rejected_; }

  // Runs one reader call on the mutated `input`. `call` returns "" when what the reader returned is
  // consistent with the file, else what is wrong; a throw must be std::runtime_error or
  // std::invalid_argument naming `must_name`.
  void Probe(int trial, const std::string& mutation, const fs::path& input, const std::string& must_name,
             const std::function<std::string()>& call) {
    std::string failure;
    message_.clear();
    ResetPeakRss();
    const std::int64_t before = PeakRssKb();
    try {
      const std::string problem = call();
      if (problem.empty()) {
        ++accepted_;
      } else {
        failure = "accepted the file but returned an inconsistent result: " + problem;
      }
    } catch (const std::runtime_error& error) {
      failure = Named(error.what(), must_name);
    } catch (const std::invalid_argument& error) {
      failure = Named(error.what(), must_name);
    } catch (const std::exception& error) {
      failure = fmt::format("threw {} ('{}'), not std::runtime_error or std::invalid_argument", typeid(error).name(),
                            error.what());
    }
    // An error quoting kilobytes of the file's garbage back is no clearer than one that does not.
    if (failure.empty() && message_.size() > must_name.size() + kMaxMessageBytes) {
      failure = fmt::format("a {}-byte error message: {}...", message_.size(), message_.substr(0, 300));
    }
    const std::int64_t growth = PeakRssKb() - before;
    if (growth > kMaxRssGrowthKb) {
      failure += fmt::format("{}peak RSS grew by {} MB in one call", failure.empty() ? "" : "; ", growth >> 10);
    }
    if (failure.empty()) return;
    if (++failures_ > 5) return;  // the first few say enough
    FAIL_CHECK(fmt::format("{} (seed {}, trial {}): mutation '{}': {}; input kept at {}", name_, seed_, trial, mutation,
                           failure, KeepInput(input)));
  }

 private:
  std::string Named(const std::string& message, const std::string& must_name) {
    ++rejected_;
    message_ = message;
    if (message.find(must_name) != std::string::npos) return "";
    return fmt::format("the error does not name '{}': {}", must_name, message);
  }

  std::string name_;
  std::uint32_t seed_;
  std::mt19937 random_;
  int accepted_ = 0;
  int rejected_ = 0;
  int failures_ = 0;
  std::string message_;  // the last call's error
};

// Values that break length and count fields: zero, one, off by one from the truth, the file's
// size and its neighbours, each width's extremes and sign boundary, 2^32, 2^40, and noise.
std::uint64_t InterestingValue(Fuzz& fuzz, std::uint64_t original, std::uint64_t file_size, int width) {
  const std::uint64_t max =
      width >= 8 ? std::numeric_limits<std::uint64_t>::max() : (std::uint64_t{1} << (8 * width)) - 1;
  const std::vector<std::uint64_t> values = {0,
                                             1,
                                             2,
                                             original - 1,
                                             original + 1,
                                             original * 2,
                                             original / 2,
                                             original + 64,
                                             file_size,
                                             file_size - 1,
                                             file_size + 1,
                                             max,
                                             max - 1,
                                             max / 2,
                                             max / 2 + 1,
                                             0xFFFF,
                                             0x10000,
                                             0xFFFFFFFF,
                                             0xFFFFFFFE,
                                             0x100000000,
                                             kTwoTo40,
                                             std::uint64_t{1} << 62,
                                             fuzz.Random64()};
  return fuzz.Pick(values) & max;
}

void PutField(Bytes& bytes, std::size_t offset, int width, std::uint64_t value, bool big_endian = false) {
  for (int i = 0; i < width && offset + static_cast<std::size_t>(i) < bytes.size(); ++i) {
    const int shift = 8 * (big_endian ? width - 1 - i : i);
    bytes[offset + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> shift);
  }
}

std::uint64_t GetField(const Bytes& bytes, std::size_t offset, int width, bool big_endian = false) {
  std::uint64_t value = 0;
  for (int i = 0; i < width && offset + static_cast<std::size_t>(i) < bytes.size(); ++i) {
    const int shift = 8 * (big_endian ? width - 1 - i : i);
    value |= std::uint64_t{bytes[offset + static_cast<std::size_t>(i)]} << shift;
  }
  return value;
}

// Byte-level damage that knows nothing of the format; returns what it did.
std::string MutateBytes(Fuzz& fuzz, Bytes& bytes, const std::vector<std::size_t>& boundaries) {
  const std::size_t size = bytes.size();
  switch (fuzz.Below(7)) {
    case 0: {  // flip a few bytes
      const int count = 1 + static_cast<int>(fuzz.Below(8));
      for (int i = 0; i < count && size > 0; ++i)
        bytes[fuzz.Below(size)] ^= static_cast<std::uint8_t>(1 + fuzz.Below(255));
      return fmt::format("flip {} bytes", count);
    }
    case 1: {  // truncate at a structural boundary, or one byte either side of it
      std::size_t at = boundaries.empty() ? 0 : fuzz.Pick(boundaries);
      at = std::min(size, at + fuzz.Below(3) - (at > 0 ? 1 : 0));
      bytes.resize(at);
      return fmt::format("truncate at boundary {}", at);
    }
    case 2: {
      const std::size_t at = fuzz.Below(size + 1);
      bytes.resize(at);
      return fmt::format("truncate at {}", at);
    }
    case 3: {  // extend with zeros, noise or a copy of the file's own tail
      const std::size_t extra = 1 + fuzz.Below(fuzz.OneIn(4) ? 70000 : 64);
      const int kind = static_cast<int>(fuzz.Below(3));
      for (std::size_t i = 0; i < extra; ++i) {
        const std::uint8_t tail = size > 0 ? bytes[size - 1 - i % size] : 0;
        bytes.push_back(kind == 0 ? 0 : kind == 1 ? static_cast<std::uint8_t>(fuzz.Random()()) : tail);
      }
      return fmt::format("extend by {} bytes (kind {})", extra, kind);
    }
    case 4: {  // cut a range out of the middle
      const std::size_t from = fuzz.Below(size + 1);
      const std::size_t length = std::min<std::size_t>(size - from, 1 + fuzz.Below(32));
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                  bytes.begin() + static_cast<std::ptrdiff_t>(from + length));
      return fmt::format("delete {} bytes at {}", length, from);
    }
    case 5: {  // duplicate a range in place
      const std::size_t from = fuzz.Below(size + 1);
      const std::size_t length = std::min<std::size_t>(size - from, 1 + fuzz.Below(64));
      const Bytes copy(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                       bytes.begin() + static_cast<std::ptrdiff_t>(from + length));
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(from), copy.begin(), copy.end());
      return fmt::format("duplicate {} bytes at {}", length, from);
    }
    default: {  // one byte to an extreme
      if (size == 0) return "nothing";
      const std::size_t at = fuzz.Below(size);
      bytes[at] = fuzz.Pick(std::vector<std::uint8_t>{0, 1, 0x7F, 0x80, 0xFE, 0xFF});
      return fmt::format("extreme byte at {}", at);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Writers of valid files, recording where their fields and records lie.

Layout Idx(const std::vector<std::uint32_t>& dims, const Bytes& payload) {
  Layout idx;
  idx.bytes = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  idx.fields = {{0, 2, "magic zeros", true}, {2, 1, "type code"}, {3, 1, "dims count"}};
  idx.boundaries = {0, 2, 3, 4};
  for (std::uint32_t dim : dims) {
    idx.fields.push_back({idx.bytes.size(), 4, fmt::format("dim {}", idx.fields.size() - 3), true});
    PutBig32(idx.bytes, dim);
    idx.boundaries.push_back(idx.bytes.size());
  }
  idx.payloads = {{idx.bytes.size(), idx.bytes.size() + payload.size()}};
  Append(idx.bytes, payload);
  idx.boundaries.push_back(idx.bytes.size());
  return idx;
}

Bytes Pattern(std::size_t count, int seed, int modulo = 256) {
  Bytes bytes(count);
  for (std::size_t i = 0; i < count; ++i)
    bytes[i] =
        static_cast<std::uint8_t>((i * 37 + static_cast<std::size_t>(seed) * 11) % static_cast<std::size_t>(modulo));
  return bytes;
}

// The dict of a .npy header, unpadded.
std::string NpyDict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr, fortran, shape);
}

// A .npy file: magic, version, header length (2 bytes for 1.0, 4 for 2.0 and 3.0), the dict padded
// with spaces and a newline to a multiple of 64 bytes, the data. `length_field` overrides the length.
Bytes Npy(const std::string& dict, const Bytes& data, int major = 1,
          std::optional<std::uint64_t> length_field = std::nullopt) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  PutLittle(out, length_field.value_or(header.size()), major == 1 ? 2 : 4);
  out.insert(out.end(), header.begin(), header.end());
  Append(out, data);
  return out;
}

constexpr ZipKind kZipKinds[] = {ZipKind::kStored, ZipKind::kDeflate, ZipKind::kZip64};

// ---------------------------------------------------------------------------------------------
// Judges of what a reader returned.

std::uint64_t FileSize(const fs::path& path) {
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  return error ? 0 : static_cast<std::uint64_t>(size);
}

// The product of `dims`, or nullopt past 2^64 (a zero dim wins).
std::optional<std::uint64_t> Product(const std::vector<std::int64_t>& dims, std::uint64_t start = 1) {
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  std::uint64_t product = start;
  for (std::int64_t dim : dims) {
    if (dim < 0 || __builtin_mul_overflow(product, static_cast<std::uint64_t>(dim), &product)) return std::nullopt;
  }
  return product;
}

std::string CheckIdx(const IdxArray& array, std::uint64_t file_size) {
  const std::optional<std::uint64_t> payload = Product(array.dims);
  if (!payload || *payload != array.data.size()) {
    return fmt::format("dims ({}) with {} data bytes", fmt::join(array.dims, ","), array.data.size());
  }
  if (4 + 4 * array.dims.size() + array.data.size() != file_size) {
    return fmt::format("{} dims and {} data bytes from a {}-byte file", array.dims.size(), array.data.size(),
                       file_size);
  }
  return "";
}

// Item size from a descr such as "<f4"; 0 when it has none.
std::uint64_t ItemSize(const std::string& descr) {
  if (descr.size() < 3 || descr.size() > 4) return 0;
  std::uint64_t size = 0;
  for (char c : descr.substr(2)) {
    if (c < '0' || c > '9') return 0;
    size = size * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return size;
}

std::string CheckNpz(const std::map<std::string, NpyArray>& arrays, std::uint64_t file_size) {
  std::uint64_t total = 0;
  for (const auto& [name, array] : arrays) {
    const std::uint64_t item = ItemSize(array.descr);
    if (item == 0 || std::string_view("<>|=").find(array.descr[0]) == std::string_view::npos ||
        std::string_view("biufc").find(array.descr[1]) == std::string_view::npos) {
      return fmt::format("array '{}' has dtype '{}'", name, array.descr);
    }
    const std::optional<std::uint64_t> bytes = Product(array.shape, item);
    if (!bytes || *bytes != array.data.size()) {
      return fmt::format("array '{}' has shape ({}) of '{}' and {} data bytes", name, fmt::join(array.shape, ","),
                         array.descr, array.data.size());
    }
    total += array.data.size();
  }
  if (total > kMaxInflateRatio * file_size)
    return fmt::format("{} data bytes from a {}-byte archive", total, file_size);
  return "";
}

std::string CheckSplit(const MnistSplit& split, int batch_size, std::uint64_t max_pixels) {
  const Shape& images = split.images.GetShape();
  const Shape& labels = split.labels.GetShape();
  if (split.images.GetDType() != DType::kF32 || split.labels.GetDType() != DType::kI32 || images.Rank() != 5 ||
      labels.Rank() != 2 || images[0] < 1 || images[1] != batch_size || images[2] != 1 || labels[0] != images[0] ||
      labels[1] != batch_size) {
    return fmt::format("images {} {} and labels {} {} for batches of {}", images, split.images.GetDType(), labels,
                       split.labels.GetDType(), batch_size);
  }
  const auto pixels = static_cast<std::uint64_t>(split.images.NumElements());
  if (pixels > max_pixels) return fmt::format("{} pixels where the files hold at most {}", pixels, max_pixels);
  const float* data = split.images.Data<float>();
  for (std::uint64_t i = 0; i < pixels; ++i) {
    if (!(data[i] >= 0.0f && data[i] <= 1.0f)) return fmt::format("pixel {} is {}", i, data[i]);
  }
  return "";
}

std::string CheckMnist(const Mnist& mnist, int batch_size, std::uint64_t max_pixels) {
  std::string problem = CheckSplit(mnist.train, batch_size, max_pixels);
  if (problem.empty()) problem = CheckSplit(mnist.test, batch_size, max_pixels);
  return problem;
}

// Every variable folder gave a tensor whose bytes are exactly its out file's.
std::string CheckCheckpoint(const std::map<std::string, Tensor>& loaded, const fs::path& root) {
  std::set<std::string> folders;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) folders.insert(entry.path().filename().string());
  }
  std::set<std::string> names;
  for (const auto& [name, tensor] : loaded) {
    names.insert(name);
    const std::uint64_t size = FileSize(root / name / "out");
    if (tensor.NumBytes() != size) {
      return fmt::format("variable '{}' is {} {} ({} bytes) from a {}-byte out file", name, tensor.GetShape(),
                         tensor.GetDType(), tensor.NumBytes(), size);
    }
    if (tensor.GetDType() == DType::kBool) {
      const auto* bytes = static_cast<const std::uint8_t*>(tensor.RawData());
      for (std::size_t i = 0; i < tensor.NumBytes(); ++i) {
        if (bytes[i] > 1) return fmt::format("bool variable '{}' holds byte {}", name, bytes[i]);
      }
    }
  }
  if (names != folders)
    return fmt::format("variables [{}] from folders [{}]", fmt::join(names, ","), fmt::join(folders, ","));
  return "";
}

// ---------------------------------------------------------------------------------------------
// The corpora: small valid files of every kind the readers take.

constexpr int kRows = 28;
constexpr int kCols = 28;
constexpr std::uint32_t kTrainCount = 7;
constexpr std::uint32_t kTestCount = 5;

const char* const kIdxNames[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                 "t10k-labels-idx1-ubyte"};

std::vector<Layout> IdxCorpus() {
  return {Idx({kTrainCount, kRows, kCols}, Pattern(kTrainCount * kRows * kCols, 1)),
          Idx({kTrainCount}, Pattern(kTrainCount, 1, 10)),
          Idx({kTestCount, kRows, kCols}, Pattern(kTestCount * kRows * kCols, 2)),
          Idx({kTestCount}, Pattern(kTestCount, 2, 10)),
          Idx({3, 4, 5, 2}, Pattern(120, 3)),
          Idx({0, 28, 28}, {})};
}

// One array of a .npz corpus: its header's parts and data, so mutations can change any of them.
struct NpySpec {
  std::string name;
  std::string descr;
  std::string shape;
  Bytes data;
  std::string fortran = "False";
};

std::vector<NpySpec> NpzCorpus() {
  return {{"weights.npy", "<f4", "(3, 4)", Pattern(48, 1)},     {"labels.npy", "|u1", "(10,)", Pattern(10, 2, 10)},
          {"scalar.npy", "<i8", "()", Pattern(8, 3)},           {"empty.npy", "|b1", "(0, 4)", {}},
          {"cube.npy", ">i4", "(2, 3, 5)", Pattern(120, 4)},    {"complex.npy", "<c16", "(2,)", Pattern(32, 5)},
          {"column.npy", "<u2", "(6,)", Pattern(12, 6), "True"}};
}

std::vector<ZipMember> Members(const std::vector<NpySpec>& specs) {
  std::vector<ZipMember> members;
  for (const NpySpec& spec : specs)
    members.push_back({spec.name, Npy(NpyDict(spec.descr, spec.shape, spec.fortran), spec.data)});
  return members;
}

std::vector<NpySpec> MnistSpecs() {
  return {{"x_train.npy", "|u1", fmt::format("({}, {}, {})", kTrainCount, kRows, kCols),
           Pattern(kTrainCount * kRows * kCols, 1)},
          {"y_train.npy", "|u1", fmt::format("({},)", kTrainCount), Pattern(kTrainCount, 1, 10)},
          {"x_test.npy", "|u1", fmt::format("({}, {}, {})", kTestCount, kRows, kCols),
           Pattern(kTestCount * kRows * kCols, 2)},
          {"y_test.npy", "<i8", fmt::format("({},)", kTestCount), [] {
             Bytes labels;
             for (std::uint8_t label : Pattern(kTestCount, 2, 10)) PutLittle(labels, label, 8);
             return labels;
           }()}};
}

// Text for a dimension: the extremes of int64 and uint64 and past them, 2^32 and 2^40, signs,
// other notations, and small truthful-looking values.
std::string InterestingDim(Fuzz& fuzz, std::uint64_t original) {
  const std::vector<std::string> dims = {"0",
                                         "1",
                                         "2",
                                         fmt::format("{}", original),
                                         fmt::format("{}", original + 1),
                                         fmt::format("{}", original - 1),
                                         "-1",
                                         "-0",
                                         "+3",
                                         "4294967295",
                                         "4294967296",
                                         "2147483648",
                                         "1099511627776",
                                         "4611686018427387904",
                                         "9223372036854775807",
                                         "9223372036854775808",
                                         "18446744073709551615",
                                         "18446744073709551616",
                                         "99999999999999999999999",
                                         "1e3",
                                         "0x10",
                                         "3.0",
                                         "3L",
                                         "",
                                         " ",
                                         "True",
                                         "'3'",
                                         "None"};
  return fuzz.Pick(dims);
}

std::string InterestingShape(Fuzz& fuzz, std::uint64_t elements) {
  switch (fuzz.Below(6)) {
    case 0:
      return "()";
    case 1:
      return fmt::format("({},)", InterestingDim(fuzz, elements));
    case 2: {
      std::string shape = "(";
      const int rank = 1 + static_cast<int>(fuzz.Below(5));
      for (int i = 0; i < rank; ++i) shape += InterestingDim(fuzz, elements) + (i + 1 < rank || rank == 1 ? ", " : "");
      return shape + ")";
    }
    case 3: {  // many dims of 1
      const int rank = fuzz.Pick(std::vector<int>{33, 64, 65, 1000, 20000});
      std::string shape = "(";
      for (int i = 0; i < rank; ++i) shape += "1,";
      return shape + ")";
    }
    case 4:
      return fuzz.Pick(
          std::vector<std::string>{"(", "(3", "(3,,4)", "(,)", "[3]", "((3,),)", "3", "(3 4)", ")(", "(3,)x"});
    default:
      return fmt::format("({}, {})", elements, 0);
  }
}

std::string InterestingDescr(Fuzz& fuzz, const std::string& original) {
  const std::vector<std::string> descrs = {original,  "<f4",
                                           "<f8",     "|u1",
                                           "<i8",     ">i4",
                                           "<c16",    "|b1",
                                           "<f",      "f4",
                                           "<f0",     "<f17",
                                           "<f99",    "<f100",
                                           "|O",      "|O8",
                                           "<U3",     "|S5",
                                           "<M8[ns]", "",
                                           "<",       "=i2",
                                           "?u1",     "<x4",
                                           "<f4\x01", std::string(3000, 'A'),
                                           "<i08"};
  return fuzz.Pick(descrs);
}

// Mutates one .npy member below the zip layer, so the archive around it stays valid (CRC included)
// and the damage reaches the .npy parser; returns what it did.
std::string MutateNpy(Fuzz& fuzz, const NpySpec& spec, Bytes& npy) {
  const std::uint64_t item = std::max<std::uint64_t>(1, ItemSize(spec.descr));
  const std::uint64_t elements = spec.data.size() / item;
  std::string descr = spec.descr;
  std::string shape = spec.shape;
  std::string fortran = spec.fortran;
  Bytes data = spec.data;
  int major = 1;
  std::optional<std::uint64_t> length_field;
  std::string what;
  switch (fuzz.Below(9)) {
    case 0:
      shape = InterestingShape(fuzz, elements);
      what = "shape " + shape.substr(0, 60);
      break;
    case 1:
      descr = InterestingDescr(fuzz, spec.descr);
      what = "descr '" + descr.substr(0, 20) + "'";
      break;
    case 2:
      fortran = fuzz.Pick(std::vector<std::string>{"True", "False", "1", "true", "Tru", "None", "", "'False'"});
      what = "fortran_order " + fortran;
      break;
    case 3: {  // data one byte or one item short or long, or empty
      const std::size_t size = data.size();
      const std::size_t length =
          fuzz.Pick(std::vector<std::size_t>{0, size + 1, size - std::min<std::size_t>(size, 1), size + item,
                                             size - std::min<std::size_t>(size, item), 2 * size});
      data.resize(length, 0x5A);
      what = fmt::format("{} data bytes", length);
      break;
    }
    case 4:
      major = fuzz.Pick(std::vector<int>{0, 2, 3, 4, 255});
      what = fmt::format("version {}", major);
      break;
    case 5: {
      major = fuzz.OneIn(2) ? 1 : 2;
      const std::uint64_t header =
          ((major == 1 ? 10 : 12) + NpyDict(descr, shape, fortran).size() + 1 + 63) / 64 * 64 - (major == 1 ? 10 : 12);
      length_field = InterestingValue(fuzz, header, header + data.size(), major == 1 ? 2 : 4);
      what = fmt::format("version {} header length {} (true {})", major, *length_field, header);
      break;
    }
    default: {  // damage to the dict's text itself
      std::string dict = NpyDict(descr, shape, fortran);
      Bytes text(dict.begin(), dict.end());
      what = "dict: " + MutateBytes(fuzz, text, {0, 1, 10, 11, dict.size() / 2, dict.size() - 2, dict.size()});
      npy = Npy(std::string(text.begin(), text.end()), data, major);
      return what;
    }
  }
  npy = Npy(NpyDict(descr, shape, fortran), data, major, length_field);
  return what;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The fuzz loops.

TEST_CASE("fuzz: IDX files through ReadIdx and LoadMnist (seed 20261201 + 1)") {
  ScratchDir dir;
  Fuzz fuzz("IDX fuzz", Seed(1));
  const std::vector<Layout> corpus = IdxCorpus();
  const fs::path path = dir.Path() / "file-idx";
  const int trials = Trials(3000);
  for (int trial = 0; trial < trials; ++trial) {
    const Layout& base = fuzz.Pick(corpus);
    Bytes bytes = base.bytes;
    std::string what;
    if (fuzz.OneIn(2)) {
      const Field& field = fuzz.Pick(base.fields);
      const std::uint64_t value =
          field.width == 1
              ? fuzz.Pick(std::vector<std::uint64_t>{0, 1, 2, 3, 4, 7, 8, 9, 0x0B, 0x0D, 0x80, 254, 255})
              : InterestingValue(fuzz, GetField(bytes, field.offset, field.width, true), bytes.size(), field.width);
      PutField(bytes, field.offset, field.width, value, field.big_endian);
      what = fmt::format("{} = {}", field.name, value);
      if (fuzz.OneIn(3)) what += "; " + MutateBytes(fuzz, bytes, base.boundaries);
    } else {
      what = MutateBytes(fuzz, bytes, base.boundaries);
    }
    WriteBytes(path, bytes);
    fuzz.Probe(trial, what, path, path.string(), [&] { return CheckIdx(ReadIdx(path.string()), bytes.size()); });

    // One file of a complete MNIST folder mutated, through LoadMnist.
    if (trial % 8 == 0) {
      const fs::path folder = dir.Path() / "mnist";
      fs::create_directories(folder);
      std::uint64_t total = 0;
      const std::size_t victim = fuzz.Below(4);
      for (std::size_t i = 0; i < 4; ++i) {
        WriteBytes(folder / kIdxNames[i], i == victim ? bytes : corpus[i].bytes);
        total += i == victim ? bytes.size() : corpus[i].bytes.size();
      }
      const int batch_size = 1 + static_cast<int>(fuzz.Below(6));
      fuzz.Probe(trial, fmt::format("{} as {}, batch {}", what, kIdxNames[victim], batch_size),
                 folder / kIdxNames[victim], folder.string(),
                 [&] { return CheckMnist(LoadMnist(batch_size, folder.string()), batch_size, total); });
    }
  }
  CHECK(fuzz.Rejected() > trials / 2);
}

TEST_CASE("fuzz: .npy headers and data inside .npz archives through ReadNpz (seed 20261201 + 2)") {
  ScratchDir dir;
  Fuzz fuzz(".npy fuzz", Seed(2));
  const std::vector<NpySpec> specs = NpzCorpus();
  const fs::path path = dir.Path() / "arrays.npz";
  const int trials = Trials(3000);
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<ZipMember> members = Members(specs);
    const std::size_t victim = fuzz.Below(members.size());
    const std::string what = members[victim].name + ": " + MutateNpy(fuzz, specs[victim], members[victim].data);
    const ZipKind kind = kZipKinds[fuzz.Below(3)];
    Bytes bytes;
    if (fuzz.OneIn(50)) {
      bytes = members[victim].data;  // a bare .npy where an archive belongs
    } else {
      bytes = Zip(members, kind).bytes;
    }
    WriteBytes(path, bytes);
    fuzz.Probe(trial, fmt::format("{} (zip kind {})", what, static_cast<int>(kind)), path, path.string(),
               [&] { return CheckNpz(ReadNpz(path.string()), bytes.size()); });
  }
  CHECK(fuzz.Rejected() > trials / 2);
  CHECK(fuzz.Accepted() > 0);
}

TEST_CASE("fuzz: .npz zip structure, lying directories, headers and sizes, corrupt deflate data (seed 20261201 + 3)") {
  ScratchDir dir;
  Fuzz fuzz("zip fuzz", Seed(3));
  std::vector<Layout> corpus;
  for (ZipKind kind : kZipKinds) {
    corpus.push_back(Zip(Members(NpzCorpus()), kind));
    corpus.push_back(Zip({{"a.npy", Npy(NpyDict("<f8", "(4,)"), Pattern(32, 7))}}, kind, /*aliases=*/2));
  }
  // Deflates about 1000:1: the inflater's buffer must grow as real output arrives.
  corpus.push_back(Zip({{"zeros.npy", Npy(NpyDict("|u1", "(262144,)"), Bytes(262144, 0))},
                        {"b.npy", Npy(NpyDict("<i2", "(3,)"), Pattern(6, 8))}},
                       ZipKind::kDeflate));
  const fs::path path = dir.Path() / "archive.npz";
  const int trials = Trials(4000);
  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t which = fuzz.Below(corpus.size());
    const Layout& base = corpus[which];
    Bytes bytes = base.bytes;
    std::string what;
    const int kind = static_cast<int>(fuzz.Below(8));
    if (kind <= 3) {  // a size, offset, count or length field lies
      const Field& field = fuzz.Pick(base.fields);
      const std::uint64_t value =
          InterestingValue(fuzz, GetField(bytes, field.offset, field.width), bytes.size(), field.width);
      PutField(bytes, field.offset, field.width, value);
      what = fmt::format("{} = {}", field.name, value);
    } else if (kind == 4) {  // corrupt compressed (or stored) member data
      const auto [begin, end] = fuzz.Pick(base.payloads);
      const int count = 1 + static_cast<int>(fuzz.Below(4));
      for (int i = 0; i < count && end > begin; ++i)
        bytes[begin + fuzz.Below(end - begin)] ^= static_cast<std::uint8_t>(1 + fuzz.Below(255));
      what = fmt::format("flip {} bytes of member data [{}, {})", count, begin, end);
    } else {
      what = MutateBytes(fuzz, bytes, base.boundaries);
    }
    if (fuzz.OneIn(4)) what += "; " + MutateBytes(fuzz, bytes, base.boundaries);
    WriteBytes(path, bytes);
    fuzz.Probe(trial, fmt::format("corpus {}: {}", which, what), path, path.string(),
               [&] { return CheckNpz(ReadNpz(path.string()), bytes.size()); });
  }
  CHECK(fuzz.Rejected() > trials / 2);
}

TEST_CASE("fuzz: mnist.npz through LoadMnist (seed 20261201 + 4)") {
  ScratchDir dir;
  Fuzz fuzz("mnist.npz fuzz", Seed(4));
  const std::vector<NpySpec> specs = MnistSpecs();
  const fs::path path = dir.Path() / "mnist.npz";
  const int trials = Trials(1500);
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<ZipMember> members = Members(specs);
    const ZipKind kind = kZipKinds[fuzz.Below(3)];
    std::string what;
    Bytes bytes;
    if (fuzz.OneIn(2)) {
      const std::size_t victim = fuzz.Below(members.size());
      what = members[victim].name + ": " + MutateNpy(fuzz, specs[victim], members[victim].data);
      bytes = Zip(members, kind).bytes;
    } else {
      const Layout zip = Zip(members, kind);
      bytes = zip.bytes;
      if (fuzz.OneIn(2)) {
        const Field& field = fuzz.Pick(zip.fields);
        const std::uint64_t value =
            InterestingValue(fuzz, GetField(bytes, field.offset, field.width), bytes.size(), field.width);
        PutField(bytes, field.offset, field.width, value);
        what = fmt::format("{} = {}", field.name, value);
      } else {
        what = MutateBytes(fuzz, bytes, zip.boundaries);
      }
    }
    WriteBytes(path, bytes);
    const int batch_size = 1 + static_cast<int>(fuzz.Below(6));
    fuzz.Probe(
        trial, fmt::format("{} (zip kind {}, batch {})", what, static_cast<int>(kind), batch_size), path, path.string(),
        [&] { return CheckMnist(LoadMnist(batch_size, path.string()), batch_size, kMaxInflateRatio * bytes.size()); });
  }
  CHECK(fuzz.Rejected() > trials / 4);
  CHECK(fuzz.Accepted() > 0);
}

namespace {

// Pieces of protobuf text format, and of what is not, for meta soups.
const std::vector<std::string> kMetaTokens = {"shape",
                                              "dim",
                                              "data_type",
                                              "kFloat",
                                              "kBool",
                                              "kInt64",
                                              "kFloat16",
                                              "stride",
                                              ":",
                                              "{",
                                              "}",
                                              "<",
                                              ">",
                                              "[",
                                              "]",
                                              ",",
                                              ";",
                                              "#",
                                              "\n",
                                              " ",
                                              "\"",
                                              "'",
                                              "\\",
                                              "0",
                                              "1",
                                              "-1",
                                              "+2",
                                              ".5",
                                              "1e9",
                                              "9223372036854775807",
                                              "9223372036854775808",
                                              std::string(1, '\0'),
                                              "\xff",
                                              "\t",
                                              "a"};

// OneFlow's data_type.proto name for a dtype, as a meta spells it.
std::string DataTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "kFloat";
    case DType::kF64:
      return "kDouble";
    case DType::kI32:
      return "kInt32";
    case DType::kI64:
      return "kInt64";
    case DType::kU8:
      return "kUInt8";
    case DType::kI8:
      return "kInt8";
    case DType::kBool:
      return "kBool";
    case DType::kF16:
      return "kFloat16";
    case DType::kBF16:
      return "kBFloat16";
    case DType::kTensorBuffer:
      return "kTensorBuffer";
  }
  return "kInvalidDataType";
}

std::string MetaSoup(Fuzz& fuzz, std::size_t tokens) {
  std::string soup;
  for (std::size_t i = 0; i < tokens; ++i) soup += fuzz.Pick(kMetaTokens) + (fuzz.OneIn(2) ? " " : "");
  return soup;
}

// OneFlow's meta for `dims` (as text) and `data_type`, in one of the layouts the parser takes.
std::string MetaWith(Fuzz& fuzz, const std::vector<std::string>& dims, const std::string& data_type) {
  std::string shape;
  if (fuzz.OneIn(3)) {
    shape = "dim: [";
    for (std::size_t i = 0; i < dims.size(); ++i) shape += (i > 0 ? ", " : "") + dims[i];
    shape += "]";
  } else {
    for (const std::string& dim : dims) shape += "  dim: " + dim + "\n";
  }
  return fmt::format("shape {{\n{}}}\ndata_type: {}\n", shape, data_type);
}

}  // namespace

TEST_CASE("fuzz: checkpoint metas and out files through LoadCheckpoint (seed 20261201 + 5)") {
  ScratchDir dir;
  Fuzz fuzz("checkpoint fuzz", Seed(5));
  const fs::path root = dir.Path() / "ckpt";
  std::map<std::string, Tensor> variables;
  variables["w"] = Tensor::FromVector<float>(Shape{2, 5}, {0.5f, -1.f, 2.25f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, -9.5f});
  variables["b"] = Tensor::FromVector<double>(Shape{3}, {1e-300, -2.5, 3.5});
  variables["i"] = Tensor::FromVector<std::int32_t>(Shape{2, 1, 2}, {-7, -1, 0, 7});
  variables["step"] = Tensor::Scalar<std::int64_t>(600);
  variables["u8"] = Tensor::FromVector<std::uint8_t>(Shape{4}, {0, 1, 128, 255});
  variables["mask"] = Tensor::FromVector<bool>(Shape{5}, {true, false, false, true, true});
  variables["empty"] = Tensor(Shape{0, 3}, DType::kF32);
  SaveCheckpoint(root.string(), variables);
  std::map<std::string, TensorSpec> specs;
  std::map<std::string, std::pair<Bytes, Bytes>> originals;  // meta and out of each variable
  std::vector<std::string> names;
  for (const auto& [name, tensor] : variables) {
    specs[name] = TensorSpec{tensor.GetShape(), tensor.GetDType()};
    originals[name] = {ReadBytes(root / name / "meta"), ReadBytes(root / name / "out")};
    names.push_back(name);
  }
  const std::vector<std::string> data_types = {"kFloat", "kDouble",     "kInt32",     "kInt64",    "kUInt8", "kBool",
                                               "kChar",  "kInt8",       "kFloat16",   "kOFRecord", "kFoo",   "kfloat",
                                               "0",      "2",           "5",          "12",        "13",     "-1",
                                               "2.0",    "99999999999", "\"kFloat\"", "[kFloat]",  ""};

  const int trials = Trials(2500);
  for (int trial = 0; trial < trials; ++trial) {
    const std::string& name = fuzz.Pick(names);
    const fs::path var = root / name;
    const auto& [meta, out] = originals[name];
    const std::uint64_t elements = static_cast<std::uint64_t>(variables[name].NumElements());
    std::string what;
    std::string must_name = var.string();
    bool with_expected = fuzz.OneIn(4);
    fs::path stray;  // a folder this trial adds
    std::map<std::string, TensorSpec> expected = specs;
    switch (fuzz.Below(12)) {
      case 0:
      case 1: {  // dims with extreme, signed, off-by-one or malformed values
        std::vector<std::string> dims;
        const int rank = fuzz.OneIn(20) ? 65 : static_cast<int>(fuzz.Below(5));
        for (int i = 0; i < rank; ++i) dims.push_back(fuzz.OneIn(3) ? "1" : InterestingDim(fuzz, elements));
        const std::string text = MetaWith(fuzz, dims, DataTypeName(variables[name].GetDType()));
        WriteText(var / "meta", text);
        what = "meta dims [" + fmt::format("{}", fmt::join(dims, " ")).substr(0, 120) + "]";
        break;
      }
      case 2: {
        const std::string& data_type = fuzz.Pick(data_types);
        std::vector<std::string> dims;
        for (std::int64_t dim : variables[name].GetShape().Dims()) dims.push_back(std::to_string(dim));
        WriteText(var / "meta", MetaWith(fuzz, dims, data_type));
        what = "meta data_type " + data_type;
        break;
      }
      case 3:
      case 4: {  // byte-level damage to the meta, or a soup of its tokens spliced in
        Bytes text = meta;
        if (fuzz.OneIn(2)) {
          what = "meta " + MutateBytes(fuzz, text, {0, text.size() / 4, text.size() / 2, text.size() - 1, text.size()});
        } else {
          const std::string soup = MetaSoup(fuzz, 1 + fuzz.Below(12));
          const std::size_t at = fuzz.Below(text.size() + 1);
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), soup.begin(), soup.end());
          what = fmt::format("meta with a {}-byte soup at {}", soup.size(), at);
        }
        WriteBytes(var / "meta", text);
        break;
      }
      case 5: {
        const std::string soup = MetaSoup(fuzz, fuzz.Below(60));
        WriteText(var / "meta", soup);
        what = "meta replaced by a soup";
        break;
      }
      case 6: {  // metas far larger or deeper than real ones
        const int variant = static_cast<int>(fuzz.Below(3));
        std::string text = variant == 0   ? std::string((1 << 20) + 1, ' ')
                           : variant == 1 ? [] {
                               std::string deep;
                               for (int i = 0; i < 5000; ++i) deep += "a { ";
                               return deep;
                             }()
                                          : MetaSoup(fuzz, 40000);
        WriteText(var / "meta", text);
        what = fmt::format("huge meta (variant {})", variant);
        break;
      }
      case 7:
      case 8: {  // out truncated, extended or with changed bytes
        Bytes bytes = out;
        what = "out " + MutateBytes(fuzz, bytes, {0, bytes.size() / 2, bytes.size()});
        WriteBytes(var / "out", bytes);
        break;
      }
      case 9: {  // files missing or of the wrong kind
        const int variant = static_cast<int>(fuzz.Below(5));
        std::error_code ignored;
        if (variant == 0) fs::remove(var / "meta");
        if (variant == 1) fs::remove(var / "out");
        if (variant == 2) {
          fs::remove(var / "out");
          fs::create_directory(var / "out");
        }
        if (variant == 3) {
          fs::remove(var / "out");
          fs::create_symlink("/dev/zero", var / "out", ignored);
        }
        if (variant == 4) {
          fs::remove(root / "snapshot_done");
          must_name = root.string();
        }
        what = fmt::format("file variant {}", variant);
        break;
      }
      case 10: {  // an expected spec that no out file can match, with or without the meta
        std::vector<std::int64_t> dims;
        const int rank = static_cast<int>(fuzz.Below(4));
        for (int i = 0; i < rank; ++i) {
          dims.push_back(fuzz.Pick(std::vector<std::int64_t>{0, 1, 2, 3, static_cast<std::int64_t>(elements) + 1,
                                                             std::int64_t{1} << 31, std::int64_t{1} << 40,
                                                             std::numeric_limits<std::int64_t>::max()}));
        }
        const DType dtype =
            fuzz.Pick(std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
        expected[name] = TensorSpec{Shape(dims), dtype};
        with_expected = true;
        if (fuzz.OneIn(2)) fs::remove(var / "meta");
        what = fmt::format("expected spec {} {}", expected[name].shape, dtype);
        break;
      }
      default: {  // a variable folder that is not one
        stray = root / fuzz.Pick(std::vector<std::string>{"stray", "x y", "-", "\xff"});
        fs::create_directories(stray);
        if (fuzz.OneIn(2)) WriteText(stray / "meta", "shape { dim: 1099511627776 }\ndata_type: kUInt8\n");
        if (fuzz.OneIn(2)) WriteBytes(stray / "out", Bytes(8, 0));
        must_name = stray.string();
        what = "stray folder " + stray.filename().string();
        break;
      }
    }
    fuzz.Probe(trial, fmt::format("variable '{}': {}{}", name, what, with_expected ? " (with expected specs)" : ""),
               root, must_name, [&] {
                 return CheckCheckpoint(
                     with_expected ? LoadCheckpoint(root.string(), expected) : LoadCheckpoint(root.string()), root);
               });

    // Put the checkpoint back as it was, file by file: removing folders costs milliseconds on ext4.
    WriteBytes(var / "meta", meta);
    WriteBytes(var / "out", out);
    if (!fs::exists(root / "snapshot_done")) WriteBytes(root / "snapshot_done", {});
    if (!stray.empty()) fs::remove_all(stray);
  }
  CHECK(fuzz.Rejected() > trials / 2);
  CHECK(fuzz.Accepted() > 0);
}

// ---------------------------------------------------------------------------------------------
// Regressions: the exact inputs that made a reader crash, allocate without bound or fail unclearly,
// and files claiming 2^40 elements, each refused before anything that size is allocated.

namespace {

// `call` must throw std::runtime_error whose message names `must_name` and contains `says`, and
// grow the peak RSS by no more than kMaxRssGrowthKb.
void CheckRefused(const std::string& must_name, const std::string& says, const std::function<void()>& call) {
  CAPTURE(must_name);
  CAPTURE(says);
  ResetPeakRss();
  const std::int64_t before = PeakRssKb();
  std::string message;
  try {
    call();
    FAIL_CHECK("the reader accepted the file");
  } catch (const std::runtime_error& error) {
    message = error.what();
  } catch (const std::exception& error) {
    FAIL_CHECK("threw " << typeid(error).name() << ": " << error.what());
  }
  CAPTURE(message);
  CHECK(message.find(must_name) != std::string::npos);
  CHECK(message.find(says) != std::string::npos);
  CHECK(PeakRssKb() - before <= kMaxRssGrowthKb);
}

// A checkpoint of one variable "v" with this meta and out.
fs::path OneVariable(const ScratchDir& dir, const std::string& meta, const Bytes& out) {
  const fs::path root = dir.Path() / "ckpt";
  fs::create_directories(root / "v");
  WriteText(root / "v" / "meta", meta);
  WriteBytes(root / "v" / "out", out);
  WriteBytes(root / "snapshot_done", {});
  return root;
}

}  // namespace

TEST_CASE("fuzz regression: a meta whose dims overflow names the meta file") {
  // Seed 20261206, trial 95: "[checkpoint] variable 'step': meta says (...) i64, more bytes than 64
  // bits can count" named neither the meta nor the folder.
  ScratchDir dir;
  const fs::path root = OneVariable(dir,
                                    "shape {\n  dim: 9223372036854775807\n  dim: 1\n  dim: 1\n  dim: 0\n}\n"
                                    "data_type: kInt64\n",
                                    Bytes(8, 0));
  CheckRefused((root / "v" / "meta").string(), "more bytes than 64 bits can count",
               [&] { LoadCheckpoint(root.string()); });
  // Trial 35: the same for an expected spec, which has no file of its own: the out file is named.
  std::map<std::string, TensorSpec> expected{
      {"v", {Shape{std::int64_t{1} << 31, std::numeric_limits<std::int64_t>::max()}, DType::kBool}}};
  fs::remove(root / "v" / "meta");
  CheckRefused((root / "v" / "out").string(), "more bytes than 64 bits can count",
               [&] { LoadCheckpoint(root.string(), expected); });
}

TEST_CASE("fuzz regression: dims whose product overflows int64 before a zero dim are refused") {
  // 2^32 * 2^31 = 2^63 overflows the int64 element count (undefined behaviour in Shape::NumElements,
  // reported by UBSan) even though the zero dim makes the tensor empty and its out file 0 bytes.
  ScratchDir dir;
  const fs::path root = OneVariable(dir, "shape { dim: 4294967296 dim: 2147483648 dim: 0 }\ndata_type: kUInt8\n", {});
  CheckRefused((root / "v" / "meta").string(), "more bytes than 64 bits can count",
               [&] { LoadCheckpoint(root.string()); });
  // The same dims in the other order are a plain empty tensor.
  WriteText(root / "v" / "meta", "shape { dim: 0 dim: 4294967296 dim: 2147483648 }\ndata_type: kUInt8\n");
  CHECK(LoadCheckpoint(root.string()).at("v").NumElements() == 0);
}

TEST_CASE("fuzz: files claiming 2^40 elements are refused before allocating") {
  ScratchDir dir;
  SUBCASE("checkpoint meta, small out") {
    const fs::path root = OneVariable(dir, "shape { dim: 1099511627776 }\ndata_type: kUInt8\n", Bytes(8, 0));
    CheckRefused((root / "v" / "out").string(), "has 8 bytes, meta says (1099511627776) u8",
                 [&] { LoadCheckpoint(root.string()); });
  }
  SUBCASE("IDX dims, small payload") {
    const fs::path path = dir.Path() / "images";
    WriteBytes(path, Idx({1 << 20, 1 << 20}, Pattern(16, 1)).bytes);
    CheckRefused(path.string(), "truncated payload: dims (1048576,1048576) need 1099511627776 bytes",
                 [&] { ReadIdx(path.string()); });
  }
  SUBCASE(".npy shape in an .npz") {
    const fs::path path = dir.Path() / "a.npz";
    for (ZipKind kind : kZipKinds) {
      WriteBytes(path, Zip({{"a.npy", Npy(NpyDict("|u1", "(1099511627776,)"), Pattern(16, 1))}}, kind).bytes);
      CheckRefused(path.string(), "shape (1099511627776) of '|u1' needs 1099511627776 data bytes, the member has 16",
                   [&] { ReadNpz(path.string()); });
    }
  }
  SUBCASE("zip member's uncompressed size") {
    const fs::path path = dir.Path() / "a.npz";
    Layout zip = Zip({{"a.npy", Npy(NpyDict("|u1", "(16,)"), Pattern(16, 1))}}, ZipKind::kZip64);
    for (const Field& field : zip.fields) {
      if (field.name.starts_with("central zip64 size")) PutField(zip.bytes, field.offset, field.width, kTwoTo40);
    }
    WriteBytes(path, zip.bytes);
    CheckRefused(path.string(), "stored member 'a.npy' has compressed size", [&] { ReadNpz(path.string()); });
    zip = Zip({{"a.npy", Npy(NpyDict("|u1", "(16,)"), Pattern(16, 1))}}, ZipKind::kDeflate);
    for (const Field& field : zip.fields) {
      if (field.name.starts_with("central size")) PutField(zip.bytes, field.offset, field.width, 0xFFFFFFFF);
    }
    WriteBytes(path, zip.bytes);
    CheckRefused(path.string(), "corrupt zip: member 'a.npy' claims 4294967295 bytes from",
                 [&] { ReadNpz(path.string()); });
  }
}

TEST_CASE("fuzz regression: files of 2^40 bytes (sparse) are refused before allocating") {
  // A file's own size is no proof it fits in memory: a sparse file of 2^40 bytes takes no disk.
  // Each of these threw std::bad_alloc (release) or aborted (ASan) allocating 2^40 bytes.
  ScratchDir dir;
  SUBCASE("checkpoint out that matches its meta") {
    const fs::path root = OneVariable(dir, "shape { dim: 1099511627776 }\ndata_type: kUInt8\n", {});
    WriteSparse(root / "v" / "out", {}, kTwoTo40);
    CheckRefused((root / "v" / "out").string(), "more than this machine's memory",
                 [&] { LoadCheckpoint(root.string()); });
  }
  SUBCASE("IDX file whose payload matches its dims") {
    const fs::path path = dir.Path() / "images";
    const Bytes header = Idx({1 << 20, 1 << 20}, {}).bytes;
    WriteSparse(path, header, header.size() + kTwoTo40);
    CheckRefused(path.string(), "more than this machine's memory", [&] { ReadIdx(path.string()); });
  }
  SUBCASE(".npz archive") {
    const fs::path path = dir.Path() / "a.npz";
    WriteSparse(path, Zip({{"a.npy", Npy(NpyDict("|u1", "(1,)"), {1})}}, ZipKind::kStored).bytes, kTwoTo40);
    CheckRefused(path.string(), "more than this machine's memory", [&] { ReadNpz(path.string()); });
  }
}

TEST_CASE("fuzz regression: zip members that overlap are refused (a zip bomb)") {
  // Central directory entries "alias<i>.npy" that all point at one member's local header: each was
  // extracted again, so 300 entries of 57 bytes turned one 1 MB member into 300 MB.
  ScratchDir dir;
  const fs::path path = dir.Path() / "bomb.npz";
  for (ZipKind kind : kZipKinds) {
    CAPTURE(static_cast<int>(kind));
    WriteBytes(path, Zip({{"a.npy", Npy(NpyDict("|u1", "(1048576,)"), Bytes(1 << 20, 0))}}, kind, 300).bytes);
    CheckRefused(path.string(), "corrupt zip: members 'a.npy' and 'alias0.npy' overlap",
                 [&] { ReadNpz(path.string()); });
  }
  // Two aliases of a small member, as the zip fuzz loop's corpus has them.
  WriteBytes(path, Zip({{"a.npy", Npy(NpyDict("<f8", "(4,)"), Pattern(32, 7))}}, ZipKind::kStored, 2).bytes);
  CheckRefused(path.string(), "overlap", [&] { ReadNpz(path.string()); });
}

TEST_CASE("fuzz regression: a FIFO where a data file belongs is refused, not waited on") {
  // open(2) of a FIFO blocks until a writer comes: ReadIdx, ReadNpz and LoadMnist waited forever.
  ScratchDir dir;
  WriteBytes(dir.Path() / "train-labels-idx1-ubyte", Idx({kTrainCount}, Pattern(kTrainCount, 1, 10)).bytes);
  WriteBytes(dir.Path() / "t10k-images-idx3-ubyte", Idx({kTestCount, kRows, kCols}, Pattern(5 * 784, 2)).bytes);
  WriteBytes(dir.Path() / "t10k-labels-idx1-ubyte", Idx({kTestCount}, Pattern(kTestCount, 2, 10)).bytes);
  const fs::path fifo = dir.Path() / "train-images-idx3-ubyte";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::vector<std::pair<std::string, std::function<void()>>> readers = {
      {"ReadIdx", [&] { ReadIdx(fifo.string()); }},
      {"ReadNpz", [&] { ReadNpz(fifo.string()); }},
      {"LoadMnist", [&] { LoadMnist(1, dir.Path().string()); }}};
  for (const auto& [name, read] : readers) {
    CAPTURE(name);
    std::future<std::string> error = std::async(std::launch::async, [&read] {
      try {
        read();
      } catch (const std::runtime_error& caught) {
        return std::string(caught.what());
      }
      return std::string("accepted");
    });
    if (error.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
      // A writer lets the blocked open return, so the test fails instead of hanging.
      const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (writer >= 0) ::close(writer);
      FAIL_CHECK("the reader blocked opening the FIFO");
    }
    const std::string message = error.get();
    CAPTURE(message);
    CHECK(message.find(fifo.string() + ": is not a regular file") != std::string::npos);
  }
}

TEST_CASE("fuzz regression: errors quote at most a little of a hostile file") {
  // Each error below once quoted the file back in full: every dim of a header, a 40,000-byte shape,
  // a 3,000-byte descr. They now stay short, name the file and say what is wrong.
  ScratchDir dir;
  const auto check_short = [](const std::string& must_name, const std::string& says,
                              const std::function<void()>& call) {
    CheckRefused(must_name, says, call);
    try {
      call();
    } catch (const std::runtime_error& error) {
      CHECK(std::string(error.what()).size() < must_name.size() + 400);
    }
  };
  // Seed 20261202, trial 119: the dims count of a 7x28x28 image file set to 128, so 125 dims of pixels.
  const fs::path idx = dir.Path() / "images";
  Bytes images = Idx({kTrainCount, kRows, kCols}, Pattern(kTrainCount * kRows * kCols, 1)).bytes;
  images[3] = 128;
  WriteBytes(idx, images);
  check_short(idx.string(), "truncated payload: dims (7,28,28,", [&] { ReadIdx(idx.string()); });
  check_short(idx.string(), "... 128 dims) need", [&] { ReadIdx(idx.string()); });

  const fs::path npz = dir.Path() / "a.npz";
  // Seed 20261203, trial 67: a shape of 20,000 ones. NumPy allows 64 dims.
  std::string ones = "(";
  for (int i = 0; i < 20000; ++i) ones += "1,";
  WriteBytes(npz, Zip({{"labels.npy", Npy(NpyDict("|u1", ones + ")"), Pattern(10, 2, 10))}}, ZipKind::kDeflate).bytes);
  check_short(npz.string(), "member 'labels.npy': malformed .npy header (more than 64 dims at column",
              [&] { ReadNpz(npz.string()); });
  // Seed 20261203, trial 83: a descr of 3,000 'A's.
  WriteBytes(npz, Zip({{"empty.npy", Npy(NpyDict(std::string(3000, 'A'), "(0, 4)"), {})}}, ZipKind::kZip64).bytes);
  check_short(npz.string(), "unsupported npy dtype 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA... (3000 bytes)'",
              [&] { ReadNpz(npz.string()); });
  // Unprintable bytes in a member's name are escaped, not sent to the terminal.
  WriteBytes(npz, Zip({{"\x1b[2J.npy", Npy(NpyDict("|u1", "(3,)"), {1, 2})}}, ZipKind::kStored).bytes);
  check_short(npz.string(), "member '\\x1b[2J.npy': truncated data", [&] { ReadNpz(npz.string()); });

  // A meta token of 5,000 digits.
  const fs::path root = OneVariable(dir, "shape { dim: " + std::string(5000, '9') + " }\ndata_type: kFloat\n", {});
  check_short((root / "v" / "meta").string(), "dim out of the int64 range at line 1 (near '9999",
              [&] { LoadCheckpoint(root.string()); });
}
