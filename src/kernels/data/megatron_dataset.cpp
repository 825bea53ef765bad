#include "kernels/data/megatron_dataset.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weir::internal::megatron {
namespace {

constexpr char kMagic[] = "MMIDIDX\0\0";    // 9 bytes, without the literal's terminator
constexpr std::size_t kMagicBytes = sizeof(kMagic) - 1;
constexpr std::size_t kHeaderBytes = kMagicBytes + 8 + 1 + 8 + 8;

std::uint64_t FileBytes(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw FormatError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  return static_cast<std::uint64_t>(info.st_size);
}

template <typename T> T Load(const std::uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));  // the .bin's tokens need not be aligned for T
  return value;
}

// The documents of split `index`: the dataset's `docs` cut in parts proportional to `sizes`, each
// part's size rounded to nearest in float as OneFlow's loader rounds it.
std::vector<std::size_t> SplitDocuments(const std::vector<std::int64_t>& sizes, std::int64_t index, std::size_t docs) {
  std::int64_t total = 0;
  for (std::int64_t size : sizes) total += size;
  std::size_t begin = 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i <= static_cast<std::size_t>(index); ++i) {
    begin += count;
    const float ratio = static_cast<float>(sizes[i]) / static_cast<float>(total);
    count = static_cast<std::size_t>(std::nearbyint(ratio * static_cast<float>(docs)));
  }
  if (begin + count > docs) {
    throw std::invalid_argument(fmt::format(
        "split_sizes {} cut the dataset's {} documents so that split {} would be documents [{}, {}): there are too "
        "few documents for these splits", fmt::join(sizes, ","), docs, index, begin, begin + count));
  }
  std::vector<std::size_t> documents(count);
  std::iota(documents.begin(), documents.end(), begin);
  return documents;
}

}  // namespace

std::size_t TokenBytes(std::uint8_t dtype_code) {
  switch (dtype_code) {
    case 1: case 2: return 1;  // u8, i8
    case 3: case 8: return 2;  // i16, u16
    case 4: return 4;          // i32
    case 5: return 8;          // i64
    default: return 0;         // 6 and 7 are floats (their width differs between writers), others unknown
  }
}

Index ReadIndex(const std::string& prefix) {
  const std::string path = prefix + ".idx";
  const std::uint64_t bytes = FileBytes(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(fmt::format("cannot open '{}'", path));
  const auto fail = [&](const std::string& why) { return FormatError(fmt::format("'{}' is not a Megatron index: {}", path, why)); };
  if (bytes < kHeaderBytes) throw fail(fmt::format("{} bytes, shorter than the {}-byte header", bytes, kHeaderBytes));
  char magic[kMagicBytes];
  in.read(magic, kMagicBytes);
  if (std::memcmp(magic, kMagic, kMagicBytes) != 0) throw fail("it does not start with \"MMIDIDX\\0\\0\"");
  Index index;
  std::uint64_t sequences = 0;
  std::uint64_t boundaries = 0;
  in.read(reinterpret_cast<char*>(&index.version), 8);
  in.read(reinterpret_cast<char*>(&index.dtype_code), 1);
  in.read(reinterpret_cast<char*>(&sequences), 8);
  in.read(reinterpret_cast<char*>(&boundaries), 8);
  if (index.version != 1) throw fail(fmt::format("version {}, where this reader knows version 1", index.version));
  if (TokenBytes(index.dtype_code) == 0) {
    throw fail(fmt::format("token dtype code {}, where this reader takes 1 (uint8), 2 (int8), 3 (int16), 4 (int32), "
                           "5 (int64) or 8 (uint16)", index.dtype_code));
  }
  // Both counts against what the file holds before anything is allocated: a corrupt count is an error,
  // not a huge allocation.
  const std::uint64_t body = bytes - kHeaderBytes;
  if (sequences > body / 12 || boundaries > (body - sequences * 12) / 8 || sequences * 12 + boundaries * 8 != body) {
    throw fail(fmt::format("its header counts {} sequences and {} document boundaries, which take {} bytes after the "
                           "header, but the file has {}", sequences, boundaries,
                           sequences <= body / 12 && boundaries <= body / 8 ? fmt::format("{}", sequences * 12 + boundaries * 8)
                                                                           : std::string("more than that"),
                           body));
  }
  index.sizes.resize(sequences);
  index.addresses.resize(sequences);
  in.read(reinterpret_cast<char*>(index.sizes.data()), static_cast<std::streamsize>(sequences * 4));
  in.read(reinterpret_cast<char*>(index.addresses.data()), static_cast<std::streamsize>(sequences * 8));
  if (!in) throw fail("a read failed");
  const std::uint64_t bin_bytes = FileBytes(prefix + ".bin");
  const std::size_t token_bytes = TokenBytes(index.dtype_code);
  for (std::size_t i = 0; i < sequences; ++i) {
    const std::int64_t size = index.sizes[i];
    const std::int64_t address = index.addresses[i];
    if (size < 0 || address < 0 || static_cast<std::uint64_t>(address) > bin_bytes ||
        static_cast<std::uint64_t>(size) > (bin_bytes - static_cast<std::uint64_t>(address)) / token_bytes) {
      throw fail(fmt::format("sequence {} has {} tokens of {} bytes at byte {}, outside '{}.bin' ({} bytes)", i, size,
                             token_bytes, address, prefix, bin_bytes));
    }
  }
  return index;
}

Dataset::Dataset(const std::string& prefix, SampleSpec spec) : prefix_(prefix), spec_(std::move(spec)) {
  if (spec_.seq_length < 1 || spec_.label_length < 1 || spec_.num_samples < 1) {
    throw std::invalid_argument(fmt::format("seq_length, label_length and num_samples must be >= 1, got {}, {}, {}",
                                            spec_.seq_length, spec_.label_length, spec_.num_samples));
  }
  index_ = ReadIndex(prefix);
  const std::string bin = prefix + ".bin";
  mapped_bytes_ = FileBytes(bin);
  if (mapped_bytes_ > 0) {
    const int fd = ::open(bin.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw FormatError(fmt::format("cannot open '{}': {}", bin, std::strerror(errno)));
    void* mapped = ::mmap(nullptr, mapped_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int error = errno;
    ::close(fd);
    if (mapped == MAP_FAILED) throw FormatError(fmt::format("cannot map '{}': {}", bin, std::strerror(error)));
    tokens_ = static_cast<const std::uint8_t*>(mapped);
  }

  const std::vector<std::size_t> epoch = SplitDocuments(spec_.split_sizes, spec_.split_index, index_.sizes.size());
  std::size_t epoch_tokens = 0;
  for (std::size_t doc : epoch) epoch_tokens += static_cast<std::size_t>(index_.sizes[doc]);
  if (epoch_tokens == 0) {
    throw std::invalid_argument(fmt::format("split {} of '{}' (documents by split_sizes {}) holds no tokens",
                                            spec_.split_index, prefix, fmt::join(spec_.split_sizes, ",")));
  }
  const auto seq = static_cast<std::size_t>(spec_.seq_length);
  const auto wanted = static_cast<std::size_t>(spec_.num_samples);
  // Enough epochs for num_samples samples; a sample's last token is the next one's first, so the
  // samples take num_samples * seq_length tokens and one more.
  epochs_ = static_cast<std::size_t>(std::ceil(static_cast<double>(wanted * seq + 1) / static_cast<double>(epoch_tokens)));
  // The last epoch is shuffled apart from the others when it gives under 80 % of an epoch's samples.
  std::size_t complete = epochs_;
  if (epochs_ > 1) {
    const auto per_epoch = static_cast<std::size_t>(std::floor(static_cast<double>(epoch_tokens - 1) / static_cast<double>(seq)));
    const auto before_last =
        static_cast<std::size_t>(std::floor(static_cast<double>((epochs_ - 1) * epoch_tokens - 1) / static_cast<double>(seq)));
    const std::size_t last = wanted - std::min(wanted, before_last);
    if (last < static_cast<std::size_t>(0.8f * static_cast<float>(per_epoch))) complete = epochs_ - 1;
  }

  std::mt19937 random(spec_.seed);
  const auto add_epochs = [&](std::size_t count) {
    const auto first = static_cast<std::ptrdiff_t>(documents_.size());
    for (std::size_t e = 0; e < count; ++e) documents_.insert(documents_.end(), epoch.begin(), epoch.end());
    if (spec_.shuffle) std::shuffle(documents_.begin() + first, documents_.end(), random);
  };
  documents_.reserve(epoch.size() * epochs_);
  add_epochs(complete);
  if (complete != epochs_) add_epochs(1);

  // Where each sample starts, walking seq_length tokens at a time; the last start only marks where
  // the sample before it ends.
  const std::size_t starts =
      static_cast<std::size_t>(std::floor(static_cast<double>(epochs_ * epoch_tokens - 1) / static_cast<double>(seq))) + 1;
  starts_.reserve(starts);
  Cursor at;
  while (starts_.size() < starts && at.doc < documents_.size()) {
    starts_.push_back(at);
    std::size_t remaining = seq;
    while (remaining > 0 && at.doc < documents_.size()) {
      const std::size_t left = static_cast<std::size_t>(index_.sizes[documents_[at.doc]]) - at.offset;
      if (remaining < left) {
        at.offset += remaining;
        remaining = 0;
      } else {
        remaining -= left;
        at = {at.doc + 1, 0};
      }
    }
  }
  order_.resize(starts_.size() - 1);
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  if (spec_.shuffle) {
    const auto first_part = std::min(
        order_.size(),
        static_cast<std::size_t>(std::floor(static_cast<double>(complete * epoch_tokens - 1) / static_cast<double>(seq))));
    std::shuffle(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(first_part), random);
    if (complete != epochs_) std::shuffle(order_.begin() + static_cast<std::ptrdiff_t>(first_part), order_.end(), random);
  }
  if (order_.size() < wanted) {  // cannot happen with the epochs above; a guard against a bad count
    throw std::logic_error(fmt::format("'{}' gives {} samples, fewer than num_samples {}", prefix, order_.size(), wanted));
  }
}

Dataset::~Dataset() {
  if (tokens_ != nullptr) ::munmap(const_cast<std::uint8_t*>(tokens_), mapped_bytes_);
}

template <typename T> void Dataset::Copy(std::size_t doc, std::size_t offset, std::size_t count, T* out) const {
  const std::uint8_t* at = tokens_ + index_.addresses[doc] + offset * TokenBytes(index_.dtype_code);
  switch (index_.dtype_code) {
    case 1: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::uint8_t>(at + i)); break;
    case 2: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::int8_t>(at + i)); break;
    case 3: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::int16_t>(at + 2 * i)); break;
    case 8: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::uint16_t>(at + 2 * i)); break;
    case 4: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::int32_t>(at + 4 * i)); break;
    default: for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Load<std::int64_t>(at + 8 * i)); break;
  }
}

template <typename T> void Dataset::Sample(std::size_t i, T* out) const {
  if (i >= order_.size()) {
    throw std::out_of_range(fmt::format("sample {} of '{}', which has {} samples ({} epochs)", i, prefix_, order_.size(), epochs_));
  }
  // seq_length + label_length tokens from the sample's start, across document ends.
  Cursor at = starts_[order_[i]];
  std::size_t need = static_cast<std::size_t>(spec_.seq_length + spec_.label_length);
  while (need > 0) {
    if (at.doc >= documents_.size()) {
      throw std::out_of_range(fmt::format("sample {} of '{}' runs past the end of its last epoch (label_length {})", i,
                                          prefix_, spec_.label_length));
    }
    const std::size_t doc = documents_[at.doc];
    const std::size_t count = std::min(need, static_cast<std::size_t>(index_.sizes[doc]) - at.offset);
    Copy(doc, at.offset, count, out);
    out += count;
    need -= count;
    at = {at.doc + 1, 0};
  }
}

template void Dataset::Sample<std::int32_t>(std::size_t, std::int32_t*) const;
template void Dataset::Sample<std::int64_t>(std::size_t, std::int64_t*) const;

}  // namespace weir::internal::megatron
