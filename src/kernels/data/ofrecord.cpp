#include "kernels/data/ofrecord.hpp"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/kernel.hpp"

namespace weir::internal::ofrecord {

namespace {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Reads protobuf fields from a byte span, checking every length against what is left.
class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, const char* what) : bytes_(bytes), what_(what) {}

  bool Done() const { return at_ == bytes_.size(); }

  std::uint64_t Varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) Fail("a varint runs past the end");
      const std::uint8_t byte = bytes_[at_++];
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    Fail("a varint is longer than 10 bytes");
  }

  // A field's tag: (number, wire type).
  std::pair<std::uint64_t, std::uint32_t> Tag() {
    const std::uint64_t tag = Varint();
    if ((tag >> 3) == 0) Fail("a field has number 0");
    return {tag >> 3, static_cast<std::uint32_t>(tag & 7)};
  }

  std::span<const std::uint8_t> Take(std::uint64_t size) {
    if (size > bytes_.size() - at_) {
      Fail(fmt::format("a field of {} bytes runs past the end ({} left)", size, bytes_.size() - at_).c_str());
    }
    const std::span<const std::uint8_t> taken = bytes_.subspan(at_, static_cast<std::size_t>(size));
    at_ += static_cast<std::size_t>(size);
    return taken;
  }

  std::span<const std::uint8_t> LengthDelimited() { return Take(Varint()); }

  void Skip(std::uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: Varint(); return;
      case kFixed64: Take(8); return;
      case kLengthDelimited: LengthDelimited(); return;
      case kFixed32: Take(4); return;
      default: Fail(fmt::format("wire type {} (groups or invalid)", wire_type).c_str());
    }
  }

  [[noreturn]] void Fail(const char* why) const {
    throw FormatError(fmt::format("malformed OFRecord: in {} at byte {}: {}", what_, at_, why));
  }

 private:
  std::span<const std::uint8_t> bytes_;
  const char* what_;
  std::size_t at_ = 0;
};

struct MapEntry {
  std::span<const std::uint8_t> key;
  std::optional<Feature> feature;
};

std::optional<Feature> ParseFeature(std::span<const std::uint8_t> message) {
  Reader reader(message, "a Feature");
  std::optional<Feature> feature;
  while (!reader.Done()) {
    const auto [number, wire] = reader.Tag();
    if (number >= 1 && number <= 5 && wire == kLengthDelimited) {
      feature = Feature{static_cast<FeatureKind>(number), reader.LengthDelimited()};  // oneof: the last wins
    } else {
      reader.Skip(wire);
    }
  }
  return feature;
}

MapEntry ParseEntry(std::span<const std::uint8_t> message) {
  Reader reader(message, "a feature map entry");
  MapEntry entry;
  while (!reader.Done()) {
    const auto [number, wire] = reader.Tag();
    if (number == 1 && wire == kLengthDelimited) {
      entry.key = reader.LengthDelimited();
    } else if (number == 2 && wire == kLengthDelimited) {
      entry.feature = ParseFeature(reader.LengthDelimited());
    } else {
      reader.Skip(wire);
    }
  }
  return entry;
}

// Calls fn(entry) for each map entry of the record.
template <typename Fn> void ForEachEntry(std::span<const std::uint8_t> record, Fn&& fn) {
  Reader reader(record, "the record");
  while (!reader.Done()) {
    const auto [number, wire] = reader.Tag();
    if (number == 1 && wire == kLengthDelimited) {
      fn(ParseEntry(reader.LengthDelimited()));
    } else {
      reader.Skip(wire);
    }
  }
}

std::string_view AsText(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The bytes one value of a fixed-width kind takes; 0 for varints and bytes.
std::size_t FixedWidth(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFloat: return 4;
    case FeatureKind::kDouble: return 8;
    default: return 0;
  }
}

std::uint32_t ScalarWireType(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFloat: return kFixed32;
    case FeatureKind::kDouble: return kFixed64;
    case FeatureKind::kInt32:
    case FeatureKind::kInt64: return kVarint;
    case FeatureKind::kBytes: return kLengthDelimited;
  }
  return kLengthDelimited;
}

// Calls fn(value) for each number of a numeric list, as the list's own C++ type.
template <typename Fn> void ForEachNumber(const Feature& feature, Fn&& fn) {
  Reader reader(feature.list, "a value list");
  const std::size_t width = FixedWidth(feature.kind);
  const auto fixed = [&](std::span<const std::uint8_t> bytes) {
    if (feature.kind == FeatureKind::kFloat) {
      float value;
      std::memcpy(&value, bytes.data(), 4);
      fn(value);
    } else {
      double value;
      std::memcpy(&value, bytes.data(), 8);
      fn(value);
    }
  };
  const auto varint = [&](std::uint64_t raw) {
    if (feature.kind == FeatureKind::kInt32) {
      fn(static_cast<std::int32_t>(static_cast<std::uint32_t>(raw)));
    } else {
      fn(static_cast<std::int64_t>(raw));
    }
  };
  while (!reader.Done()) {
    const auto [number, wire] = reader.Tag();
    if (number != 1) {
      reader.Skip(wire);
    } else if (wire == kLengthDelimited) {  // packed
      const std::span<const std::uint8_t> packed = reader.LengthDelimited();
      if (width != 0) {
        if (packed.size() % width != 0) reader.Fail("a packed list's length is not a whole number of values");
        for (std::size_t at = 0; at < packed.size(); at += width) fixed(packed.subspan(at, width));
      } else {
        Reader values(packed, "a packed varint list");
        while (!values.Done()) varint(values.Varint());
      }
    } else if (wire == ScalarWireType(feature.kind)) {
      if (width != 0) {
        fixed(reader.Take(width));
      } else {
        varint(reader.Varint());
      }
    } else {
      reader.Fail(fmt::format("a {} value has wire type {}", Name(feature.kind), wire).c_str());
    }
  }
}

void AppendVarint(std::vector<std::uint8_t>& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(value));
}

void AppendField(std::vector<std::uint8_t>& out, std::uint64_t number, std::span<const std::uint8_t> bytes) {
  AppendVarint(out, (number << 3) | kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

template <typename T> void AppendFixed(std::vector<std::uint8_t>& out, T value) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

std::string_view Name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes: return "bytes_list";
    case FeatureKind::kFloat: return "float_list";
    case FeatureKind::kDouble: return "double_list";
    case FeatureKind::kInt32: return "int32_list";
    case FeatureKind::kInt64: return "int64_list";
  }
  return "?";
}

void Validate(std::span<const std::uint8_t> record) {
  ForEachEntry(record, [](const MapEntry& entry) {
    if (!entry.feature) {
      throw FormatError(fmt::format("malformed OFRecord: feature '{}' has no value list", AsText(entry.key)));
    }
    if (entry.feature->kind == FeatureKind::kBytes) {
      BytesValues(*entry.feature);
    } else {
      ForEachNumber(*entry.feature, [](auto) {});
    }
  });
}

std::optional<Feature> Find(std::span<const std::uint8_t> record, std::string_view name) {
  std::optional<Feature> found;
  ForEachEntry(record, [&](const MapEntry& entry) {
    if (AsText(entry.key) == name && entry.feature) found = entry.feature;
  });
  return found;
}

std::vector<std::string> FeatureNames(std::span<const std::uint8_t> record) {
  std::vector<std::string> names;
  ForEachEntry(record, [&](const MapEntry& entry) { names.emplace_back(AsText(entry.key)); });
  return names;
}

std::int64_t CountValues(const Feature& feature) {
  if (feature.kind == FeatureKind::kBytes) return static_cast<std::int64_t>(BytesValues(feature).size());
  std::int64_t count = 0;
  ForEachNumber(feature, [&count](auto) { ++count; });
  return count;
}

template <typename T> std::int64_t ReadValues(const Feature& feature, T* out, std::int64_t count) {
  std::int64_t seen = 0;
  if (feature.kind == FeatureKind::kBytes) {
    for (const std::span<const std::uint8_t> value : BytesValues(feature)) {
      for (std::size_t i = 0; i < value.size(); ++i, ++seen) {
        if (seen < count) out[seen] = static_cast<T>(value[i]);
      }
    }
    return seen;
  }
  ForEachNumber(feature, [&](auto value) {
    if (seen < count) out[seen] = static_cast<T>(value);
    ++seen;
  });
  return seen;
}

template std::int64_t ReadValues<float>(const Feature&, float*, std::int64_t);
template std::int64_t ReadValues<double>(const Feature&, double*, std::int64_t);
template std::int64_t ReadValues<std::int32_t>(const Feature&, std::int32_t*, std::int64_t);
template std::int64_t ReadValues<std::int64_t>(const Feature&, std::int64_t*, std::int64_t);
template std::int64_t ReadValues<std::uint8_t>(const Feature&, std::uint8_t*, std::int64_t);
template std::int64_t ReadValues<std::int8_t>(const Feature&, std::int8_t*, std::int64_t);

std::vector<std::span<const std::uint8_t>> BytesValues(const Feature& feature) {
  if (feature.kind != FeatureKind::kBytes) {
    throw FormatError(fmt::format("expected a bytes_list, the feature holds a {}", Name(feature.kind)));
  }
  std::vector<std::span<const std::uint8_t>> values;
  Reader reader(feature.list, "a bytes_list");
  while (!reader.Done()) {
    const auto [number, wire] = reader.Tag();
    if (number == 1 && wire == kLengthDelimited) {
      values.push_back(reader.LengthDelimited());
    } else if (number == 1) {
      reader.Fail(fmt::format("a bytes value has wire type {}", wire).c_str());
    } else {
      reader.Skip(wire);
    }
  }
  return values;
}

std::span<const std::uint8_t> FirstBytes(std::span<const std::uint8_t> record, const std::string& name,
                                         std::int64_t index, std::string_view op_type, std::string_view op_name) {
  const std::optional<ofrecord::Feature> feature = ofrecord::Find(record, name);
  if (!feature) {
    throw KernelError(fmt::format("[{}] op '{}': record {} of the batch has no feature '{}' (it has: {})", op_type, op_name,
                                  index, name, fmt::join(ofrecord::FeatureNames(record), ", ")));
  }
  if (feature->kind != ofrecord::FeatureKind::kBytes) {
    throw KernelError(fmt::format("[{}] op '{}': feature '{}' of record {} is a {}, not a bytes_list", op_type, op_name, name,
                                  index, ofrecord::Name(feature->kind)));
  }
  const std::vector<std::span<const std::uint8_t>> values = ofrecord::BytesValues(*feature);
  if (values.empty()) {
    throw KernelError(fmt::format("[{}] op '{}': feature '{}' of record {} holds no value", op_type, op_name, name, index));
  }
  return values.front();
}

std::string PartFilePath(const OFRecordReaderAttrs& attrs, std::int64_t index) {
  const std::string number = attrs.part_name_suffix_length < 0
                                 ? std::to_string(index)
                                 : fmt::format("{:0>{}}", index, static_cast<int>(attrs.part_name_suffix_length));
  return fmt::format("{}/{}{}", attrs.data_dir, attrs.part_name_prefix, number);
}

std::vector<std::uint8_t> Serialize(const std::vector<std::pair<std::string, FeatureValues>>& features) {
  std::vector<std::uint8_t> record;
  for (const auto& [name, values] : features) {
    std::vector<std::uint8_t> list;
    if (values.kind == FeatureKind::kBytes) {
      for (const std::string& value : values.bytes) {
        AppendField(list, 1, {reinterpret_cast<const std::uint8_t*>(value.data()), value.size()});
      }
    } else {
      std::vector<std::uint8_t> packed;
      for (const double number : values.numbers) {
        switch (values.kind) {
          case FeatureKind::kFloat: AppendFixed(packed, static_cast<float>(number)); break;
          case FeatureKind::kDouble: AppendFixed(packed, number); break;
          case FeatureKind::kInt32:
            AppendVarint(packed, static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(number))));
            break;
          default: AppendVarint(packed, static_cast<std::uint64_t>(static_cast<std::int64_t>(number))); break;
        }
      }
      AppendField(list, 1, packed);
    }
    std::vector<std::uint8_t> feature;
    AppendField(feature, static_cast<std::uint64_t>(values.kind), list);
    std::vector<std::uint8_t> entry;
    AppendField(entry, 1, {reinterpret_cast<const std::uint8_t*>(name.data()), name.size()});
    AppendField(entry, 2, feature);
    AppendField(record, 1, entry);
  }
  return record;
}

}  // namespace weir::internal::ofrecord
