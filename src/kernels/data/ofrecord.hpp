#pragma once
// OneFlow's OFRecord: a protobuf message `OFRecord { map<string, Feature> feature = 1; }` whose
// Feature holds one of BytesList (1), FloatList (2), DoubleList (3), Int32List (4), Int64List (5),
// each `repeated <type> value = 1` (packed, or not: a reader must take both). An OFRecord file is
// records one after another, each an 8-byte little-endian length and then the message.
//
// A small decoder rather than libprotobuf: the format is five list types in one map, the decoder
// reads records in place without allocating (a record's features are spans into it), and every
// length is checked against what is left, so corrupt input is an error, never a read past the end
// (tests/kernels/test_ofrecord.cpp fuzzes it).
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/op_attrs.hpp"

namespace weir::internal::ofrecord {

/// A record that is not a well-formed OFRecord; the message says where and why.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FeatureKind : std::uint8_t { kBytes = 1, kFloat = 2, kDouble = 3, kInt32 = 4, kInt64 = 5 };
/// "bytes_list", "float_list", ...
std::string_view Name(FeatureKind kind);

/// One feature of a record: its list's kind and the list message's bytes (a span into the record).
struct Feature {
  FeatureKind kind = FeatureKind::kBytes;
  std::span<const std::uint8_t> list;
};

/// Checks that `record` is a well-formed OFRecord (every length in bounds, every feature with a list
/// of a known kind, packed numbers whole); throws FormatError otherwise.
void Validate(std::span<const std::uint8_t> record);
/// The feature named `name` (the last one, as protobuf's maps keep), or nullopt. Throws FormatError on
/// malformed input.
std::optional<Feature> Find(std::span<const std::uint8_t> record, std::string_view name);
/// The names of the record's features, in order (for errors that list what a record holds).
std::vector<std::string> FeatureNames(std::span<const std::uint8_t> record);

/// How many values the feature's list holds (a bytes_list: how many byte strings).
std::int64_t CountValues(const Feature& feature);
/// Writes the first `count` values of the feature converted to T (static_cast) and returns how many
/// it holds in all, in one pass: a numeric list's numbers, or a bytes_list's bytes one after another
/// (OneFlow's raw decoder reads encoded bytes as uint8/int8 elements).
template <typename T> std::int64_t ReadValues(const Feature& feature, T* out, std::int64_t count);
/// The values of a bytes_list, each a span into the record.
std::vector<std::span<const std::uint8_t>> BytesValues(const Feature& feature);

/// The first value of bytes feature `name` of `record` (record `index` of a batch); throws
/// KernelError naming the op when the record has no such feature or it holds no bytes.
std::span<const std::uint8_t> FirstBytes(std::span<const std::uint8_t> record, const std::string& name,
                                         std::int64_t index, std::string_view op_type, std::string_view op_name);

/// Part file `index` of a reader's dataset: data_dir/<prefix><index>, the index zero-padded to
/// part_name_suffix_length digits (-1: as it is), OneFlow's (and Spark's) naming.
std::string PartFilePath(const OFRecordReaderAttrs& attrs, std::int64_t index);

/// A feature to serialize: bytes values for kBytes, numbers otherwise.
struct FeatureValues {
  FeatureKind kind = FeatureKind::kBytes;
  std::vector<std::string> bytes;
  std::vector<double> numbers;
};
/// The OFRecord message holding `features` (packed lists), for tools and tests.
std::vector<std::uint8_t> Serialize(const std::vector<std::pair<std::string, FeatureValues>>& features);

}  // namespace weir::internal::ofrecord
