#pragma once
// Op attributes by name: what a generic caller (the Python binding's add_op) passes, and how an op's
// own file reads it into the op's attribute struct (OpDef::read_attrs):
//
//   WEIR_REGISTER_OP({.type = "one_hot", ...,
//                     .read_attrs = ReadAttrs<OneHotAttrs>(Attr("depth", &OneHotAttrs::depth),
//                                                          Attr("dtype", &OneHotAttrs::dtype))});
//
// A name the op does not have, or a value of the wrong type, is an error naming the op, the
// attribute, what it expects and what it got. Attributes left out keep the struct's defaults.
#include <any>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "weir/dtype.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// One attribute's value: None (std::monostate), a bool, an integer, a number, a string, a dtype, or
/// a list of integers or numbers.
using AttrValue = std::variant<std::monostate, bool, std::int64_t, double, std::string, DType,
                               std::vector<std::int64_t>, std::vector<double>>;
using AttrMap = std::map<std::string, AttrValue, std::less<>>;
/// Reads an op's attributes into its attribute struct (in a std::any), or throws std::invalid_argument.
using AttrsReader = std::function<std::any(std::string_view op_type, const AttrMap& attrs)>;

/// The names of an enum's values, in their order ("exp", "log", ...): an attribute of that enum
/// type is passed as one of them. Specialized next to each enum that ops take.
template <typename Enum> struct EnumNames;

/// "int", "list of ints", ...: what `value` is, for errors.
std::string_view AttrTypeName(const AttrValue& value);

/// Reads `value` into `field`; throws std::invalid_argument naming `op_type` and `name` when it does
/// not convert exactly (a number into an integer field, an unknown enum name, a list of another length).
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, bool& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, int& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::int64_t& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, double& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::string& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, DType& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<std::int64_t>& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<int>& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Shape& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::uint64_t& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::vector<double>& field);
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::optional<double>& field);
/// "VALID", "SAME", or explicit pads {top, bottom, left, right}.
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Padding& field);
/// "auto", "broadcast", or "split(axis)" (OneFlow's flow.distribute).
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Distribute& field);

template <std::size_t N>
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, std::array<std::int64_t, N>& field) {
  std::vector<std::int64_t> values;
  ReadAttr(op_type, name, value, values);
  if (values.size() != N) {
    throw std::invalid_argument(fmt::format("[{}] attribute '{}': expected a list of {} ints, got {} of them", op_type,
                                            name, N, values.size()));
  }
  std::copy(values.begin(), values.end(), field.begin());
}

/// An enum with EnumNames: one of its names.
template <typename Enum, typename = decltype(EnumNames<Enum>::kNames)>
void ReadAttr(std::string_view op_type, std::string_view name, const AttrValue& value, Enum& field) {
  const auto* text = std::get_if<std::string>(&value);
  const auto& names = EnumNames<Enum>::kNames;
  for (std::size_t i = 0; text != nullptr && i < std::size(names); ++i) {
    if (*text == names[i]) {
      field = static_cast<Enum>(i);
      return;
    }
  }
  throw std::invalid_argument(fmt::format("[{}] attribute '{}': expected one of {}, got {}", op_type, name,
                                          fmt::join(names, ", "),
                                          text != nullptr ? fmt::format("'{}'", *text) : std::string(AttrTypeName(value))));
}

/// One named field of an attribute struct.
template <typename Attrs, typename T>
struct AttrField {
  std::string_view name;
  T Attrs::*member;
};

template <typename Attrs, typename T>
AttrField<Attrs, T> Attr(std::string_view name, T Attrs::*member) {
  return {name, member};
}

/// Throws naming the attribute `attrs` has that none of `known` is.
void CheckAttrNames(std::string_view op_type, const AttrMap& attrs, std::span<const std::string_view> known);

/// A reader of `Attrs` from the named fields; the attributes left out keep `Attrs{}`'s values.
template <typename Attrs, typename... Ts>
AttrsReader ReadAttrs(AttrField<Attrs, Ts>... fields) {
  return [=](std::string_view op_type, const AttrMap& map) -> std::any {
    const std::array<std::string_view, sizeof...(Ts)> known{fields.name...};
    CheckAttrNames(op_type, map, known);
    Attrs attrs{};
    const auto read = [&](const auto& field) {
      if (const auto it = map.find(field.name); it != map.end()) ReadAttr(op_type, field.name, it->second, attrs.*(field.member));
    };
    (read(fields), ...);
    return attrs;
  };
}

template <> struct EnumNames<UnaryOpKind> {
  static constexpr const auto& kNames = kUnaryOpKindNames;
};
template <> struct EnumNames<ScalarOpKind> {
  static constexpr const auto& kNames = kScalarOpKindNames;
};
template <> struct EnumNames<DataFormat> {
  static constexpr const char* kNames[] = {"NCHW", "NHWC"};
};

}  // namespace weir::internal
