#pragma once
// Slicing resolved against a shape (Python's rules), shared by the slice ops' inference and kernels.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// One axis of a slice: the first index taken, the step between indices taken, and how many.
struct SliceAxis {
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::int64_t length = 0;
};

/// Each axis of `shape` sliced by `attrs` as Python slices a sequence; std::nullopt with `why` set when
/// attrs do not fit the shape (a list of another length than the rank, a step of 0).
inline std::optional<std::vector<SliceAxis>> ResolveSlice(const Shape& shape, const SliceAttrs& attrs, std::string& why) {
  const std::size_t rank = static_cast<std::size_t>(shape.Rank());
  if (attrs.start.size() != rank || attrs.stop.size() != rank || attrs.step.size() != rank) {
    why = "start, stop and step need one entry per axis of x";
    return std::nullopt;
  }
  std::vector<SliceAxis> axes;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t dim = shape[static_cast<int>(i)];
    const std::int64_t step = attrs.step[i];
    if (step == 0) {
      why = "step must not be 0";
      return std::nullopt;
    }
    // Python's PySlice_AdjustIndices: negatives count from the end, then clamp to the axis (to one
    // before it for a negative step, which then walks down to index 0).
    const auto adjust = [&](std::int64_t index) {
      if (index < 0) {
        index = index < -dim ? -1 : index + dim;
        if (index < 0) return step < 0 ? std::int64_t{-1} : std::int64_t{0};
        return index;
      }
      return index >= dim ? (step < 0 ? dim - 1 : dim) : index;
    };
    const std::int64_t start = adjust(attrs.start[i]);
    const std::int64_t stop = adjust(attrs.stop[i]);
    std::int64_t length = 0;
    if (step > 0 && start < stop) length = (stop - start - 1) / step + 1;
    if (step < 0 && stop < start) length = (start - stop - 1) / (-step) + 1;
    axes.push_back({start, step, length});
  }
  return axes;
}

/// The shape a slice of these axes has.
inline Shape SliceShape(const std::vector<SliceAxis>& axes) {
  std::vector<std::int64_t> dims;
  for (const SliceAxis& axis : axes) dims.push_back(axis.length);
  return Shape(std::move(dims));
}

/// slice_grad (dy -> dx): the slice and x's shape.
struct SliceGradAttrs {
  SliceAttrs slice;
  Shape x_shape;
};

/// The strided view of a slice in a row-major buffer of `shape`: the element offset of the first
/// element taken, and each axis's length and stride (in elements) in that buffer.
struct SliceView {
  std::int64_t offset = 0;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
};

/// For kernels, whose attrs the op's inference has already checked against `shape`.
inline SliceView SliceViewOf(const Shape& shape, const SliceAttrs& attrs) {
  std::string why;
  const std::optional<std::vector<SliceAxis>> resolved = ResolveSlice(shape, attrs, why);
  if (!resolved) throw std::logic_error("[slice] " + why + " (the op's inference lets no such slice through)");
  const std::vector<SliceAxis>& axes = *resolved;
  SliceView view;
  std::int64_t stride = 1;
  view.dims.resize(axes.size());
  view.strides.resize(axes.size());
  for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
    const SliceAxis& axis = axes[static_cast<std::size_t>(i)];
    view.dims[static_cast<std::size_t>(i)] = axis.length;
    view.strides[static_cast<std::size_t>(i)] = axis.step * stride;
    view.offset += axis.start * stride;
    stride *= shape[i];
  }
  return view;
}

}  // namespace weir::internal
