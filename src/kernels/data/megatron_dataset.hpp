#pragma once
// A Megatron-LM indexed dataset (the "mmap" format its preprocess_data.py writes, and OneFlow's GPT
// data loader reads) and the samples OneFlow's loader cuts from it.
//
// `<prefix>.idx`: the magic "MMIDIDX\0\0", a u64 version (1), a u8 token dtype code (1 u8, 2 i8,
// 3 i16, 4 i32, 5 i64, 8 u16), a u64 count N of sequences, a u64 count M of document boundaries,
// then N i32 sequence lengths (in tokens), N i64 byte offsets of the sequences in `<prefix>.bin`, and
// M i64 document boundaries (unused here: as OneFlow's loader, each sequence is a document).
// `<prefix>.bin`: the tokens, sequence after sequence. Every count, length and offset is checked
// against the file sizes, so a corrupt dataset is an error that names the file, never a read past
// the end of a mapping.
//
// The samples: the documents of one split (the dataset's documents cut in parts proportional to the
// split sizes, rounded to nearest) laid end to end, epoch after epoch, as many epochs as the samples
// asked for need, and cut every seq_length tokens into samples of seq_length + label_length tokens
// (consecutive samples share label_length tokens). With shuffling (std::mt19937 under the seed, as
// OneFlow's), the documents of the complete epochs are shuffled together, those of a last partial
// epoch apart, and the samples likewise, so that sample i is what OneFlow's loader gives.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace weir::internal::megatron {

/// A dataset file that is not what the format says; the message names the file and the fault.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The bytes of the .idx header's token dtype code, or 0 for a code this reader does not take.
std::size_t TokenBytes(std::uint8_t dtype_code);

/// `<prefix>.idx`, read and checked against itself and the size of `<prefix>.bin`.
struct Index {
  std::uint64_t version = 0;
  std::uint8_t dtype_code = 0;
  std::vector<std::int32_t> sizes;      // tokens per document
  std::vector<std::int64_t> addresses;  // byte offset of each document in the .bin
};
Index ReadIndex(const std::string& prefix);

/// The dataset's shape of the samples (OneFlow's attributes).
struct SampleSpec {
  std::int64_t seq_length = 0;
  std::int64_t label_length = 1;
  std::int64_t num_samples = 0;
  std::vector<std::int64_t> split_sizes = {1};
  std::int64_t split_index = 0;
  bool shuffle = true;
  std::uint32_t seed = 0;
};

/// A memory-mapped dataset and the order of its samples.
class Dataset {
 public:
  /// Reads `<prefix>.idx`, maps `<prefix>.bin`, and builds the sample order; throws FormatError or
  /// std::invalid_argument (a split without tokens, bad sizes).
  Dataset(const std::string& prefix, SampleSpec spec);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  /// How many samples there are (at least num_samples: the last epoch is read to its end).
  std::size_t Size() const { return order_.size(); }
  std::size_t Epochs() const { return epochs_; }
  /// Sample `i` (i < Size()) into `out`, seq_length + label_length tokens converted to `T`.
  template <typename T> void Sample(std::size_t i, T* out) const;

 private:
  struct Cursor {  // a position in the epochs' document order: document slot and token offset in it
    std::size_t doc = 0;
    std::size_t offset = 0;
  };
  template <typename T> void Copy(std::size_t doc, std::size_t offset, std::size_t count, T* out) const;

  std::string prefix_;
  SampleSpec spec_;
  Index index_;
  const std::uint8_t* tokens_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  std::size_t epochs_ = 0;
  std::vector<std::size_t> documents_;  // the epochs' documents, in reading order
  std::vector<Cursor> starts_;          // where each sample starts; one more marks the end of the last
  std::vector<std::size_t> order_;      // sample i is starts_[order_[i]]
};

extern template void Dataset::Sample<std::int32_t>(std::size_t, std::int32_t*) const;
extern template void Dataset::Sample<std::int64_t>(std::size_t, std::int64_t*) const;

}  // namespace weir::internal::megatron
