#include "graph/attrs_by_name.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include <fmt/ranges.h>

namespace weir::internal {

namespace {

[[noreturn]] void Mismatch(std::string_view op_type, std::string_view name, std::string_view expected, const AttrValue& got) {
  throw std::invalid_argument(
      fmt::format("[{}] attribute '{}': expected {}, got {}", op_type, name, expected, AttrTypeName(got)));
}

// The same, with a string value shown itself: for attributes given as one of some names.
[[noreturn]] void NotOneOf(std::string_view op_type, std::string_view name, std::string_view expected, const AttrValue& got) {
  const auto* text = std::get_if<std::string>(&got);
  throw std::invalid_argument(fmt::format("[{}] attribute '{}': expected {}, got {}", op_type, name, expected,
                                          text != nullptr ? fmt::format("'{}'", *text) : std::string(AttrTypeName(got))));
}

// Attributes whose value must be of the field's own type.
template <typename T>
void ReadExact(std::string_view op_type, std::string_view name, const AttrValue& value, T& field, std::string_view expected) {
  if (const auto* exact = std::get_if<T>(&value)) {
    field = *exact;
    return;
  }
  Mismatch(op_type, name, expected, value);
}

int NarrowToInt(std::string_view op_type, std::string_view name, std::int64_t wide) {
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(fmt::format("[{}] attribute '{}': {} is out of range", op_type, name, wide));
  }
  return static_cast<int>(wide);
}

}  // namespace

std::string_view AttrTypeName(const AttrValue& value) {
  switch (value.index()) {
    case 0: return "None";
    case 1: return "a bool";
    case 2: return "an int";
    case 3: return "a float";
    case 4: return "a str";
    case 5: return "a dtype";
    case 6: return "a list of ints";
    case 7: return "a list of floats";
  }
  return "?";
}

void CheckAttrNames(std::string_view op_type, const AttrMap& attrs, std::span<const std::string_view> known) {
  for (const auto& [name, value] : attrs) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw std::invalid_argument(fmt::format("[{}] has no attribute '{}' (its attributes: {})", op_type, name,
                                              known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
    }
  }
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, bool& field) {
  ReadExact(op_type, name, value, field, "a bool");
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::int64_t& field) {
  ReadExact(op_type, name, value, field, "an int");
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, int& field) {
  std::int64_t wide = 0;
  ReadAttr(op_type, name, value, wide);
  field = NarrowToInt(op_type, name, wide);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, double& field) {
  if (const auto* d = std::get_if<double>(&value)) {
    field = *d;
    return;
  }
  if (const auto* i = std::get_if<std::int64_t>(&value)) {  // 1 for 1.0
    field = static_cast<double>(*i);
    return;
  }
  Mismatch(op_type, name, "a float", value);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::string& field) {
  ReadExact(op_type, name, value, field, "a str");
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, DType& field) {
  ReadExact(op_type, name, value, field, "a dtype");
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Shape& field) {
  std::vector<std::int64_t> dims;
  ReadAttr(op_type, name, value, dims);
  field = Shape(std::move(dims));
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<std::int64_t>& field) {
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&value)) {
    field = *list;
    return;
  }
  // An empty list of floats is an empty list.
  if (const auto* list = std::get_if<std::vector<double>>(&value); list != nullptr && list->empty()) {
    field.clear();
    return;
  }
  Mismatch(op_type, name, "a list of ints", value);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<int>& field) {
  std::vector<std::int64_t> wide;
  ReadAttr(op_type, name, value, wide);
  field.clear();
  for (std::int64_t v : wide) field.push_back(NarrowToInt(op_type, name, v));
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::uint64_t& field) {
  std::int64_t wide = 0;
  ReadAttr(op_type, name, value, wide);
  if (wide < 0) {
    throw std::invalid_argument(fmt::format("[{}] attribute '{}': expected an int >= 0, got {}", op_type, name, wide));
  }
  field = static_cast<std::uint64_t>(wide);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<double>& field) {
  if (const auto* list = std::get_if<std::vector<double>>(&value)) {
    field = *list;
    return;
  }
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&value)) {  // [0, 1] for [0.0, 1.0]
    field.assign(list->begin(), list->end());
    return;
  }
  Mismatch(op_type, name, "a list of floats", value);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::optional<double>& field) {
  if (std::holds_alternative<std::monostate>(value)) {
    field.reset();
    return;
  }
  double d = 0;
  ReadAttr(op_type, name, value, d);
  field = d;
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Padding& field) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (*text == "VALID" || *text == "valid") {
      field = ValidPadding();
      return;
    }
    if (*text == "SAME" || *text == "same") {
      field = SamePadding();
      return;
    }
  } else if (const auto* pads = std::get_if<std::vector<std::int64_t>>(&value); pads != nullptr && pads->size() == 4) {
    field = ExplicitPadding((*pads)[0], (*pads)[1], (*pads)[2], (*pads)[3]);
    return;
  }
  NotOneOf(op_type, name, "'VALID', 'SAME' or explicit pads [top, bottom, left, right]", value);
}

void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Distribute& field) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (*text == "auto") {
      field = Distribute::Auto();
      return;
    }
    if (*text == "broadcast") {
      field = Distribute::Broadcast();
      return;
    }
    int axis = 0;
    char end = 0;
    if (std::sscanf(text->c_str(), "split(%d%c", &axis, &end) == 2 && end == ')') {
      field = Distribute::Split(axis);
      return;
    }
  }
  NotOneOf(op_type, name, "'auto', 'broadcast' or 'split(axis)'", value);
}

}  // namespace weir::internal
