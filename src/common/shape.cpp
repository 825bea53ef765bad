#include "weir/shape.hpp"

#include <stdexcept>

namespace weir {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {
  for (std::int64_t dim : dims_) {
    if (dim < 0) throw std::invalid_argument(fmt::format("[Shape] negative dimension in {}", ToString()));
  }
}

std::int64_t Shape::Dim(int axis) const {
  const int rank = Rank();
  const int resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank) {
    throw std::out_of_range(fmt::format("[Shape] axis {} out of range for {}", axis, ToString()));
  }
  return dims_[static_cast<std::size_t>(resolved)];
}

std::int64_t Shape::NumElements() const {
  std::int64_t count = 1;
  for (std::int64_t dim : dims_) count *= dim;
  return count;
}

std::string Shape::ToString() const { return fmt::format("({})", fmt::join(dims_, ",")); }

}  // namespace weir
