#pragma once
/// \file Tensor shapes.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace weir {

/// Dimensions of a tensor, outermost first. A rank-0 shape is a scalar with one element.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);

  int Rank() const { return static_cast<int>(dims_.size()); }
  /// Dimension `axis`; a negative axis counts from the end.
  std::int64_t Dim(int axis) const;
  std::int64_t operator[](int axis) const { return Dim(axis); }
  const std::vector<std::int64_t>& Dims() const { return dims_; }
  std::int64_t NumElements() const;
  /// "(100,784)".
  std::string ToString() const;

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace weir

template <> struct fmt::formatter<weir::Shape> : fmt::formatter<std::string_view> {
  template <typename Context> auto format(const weir::Shape& shape, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(shape.ToString(), ctx);
  }
};
