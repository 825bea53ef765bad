#pragma once
// Shape and dtype of a value, known at compile time; and non-owning views of runtime memory.
#include <fmt/format.h>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

struct TensorMeta {
  Shape shape;
  DType dtype = DType::kF32;

  std::size_t NumBytes() const { return static_cast<std::size_t>(shape.NumElements()) * SizeOf(dtype); }
  std::string ToString() const { return fmt::format("{}{}", dtype, shape); }
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

/// Memory a kernel writes: a planned register slot.
struct TensorView {
  void* data = nullptr;
  const TensorMeta* meta = nullptr;

  template <typename T> T* As() const { return static_cast<T*>(data); }
  std::int64_t NumElements() const { return meta->shape.NumElements(); }
  const Shape& GetShape() const { return meta->shape; }
  DType GetDType() const { return meta->dtype; }
};

/// Memory a kernel reads.
struct ConstTensorView {
  const void* data = nullptr;
  const TensorMeta* meta = nullptr;

  template <typename T> const T* As() const { return static_cast<const T*>(data); }
  std::int64_t NumElements() const { return meta->shape.NumElements(); }
  const Shape& GetShape() const { return meta->shape; }
  DType GetDType() const { return meta->dtype; }
};

}  // namespace weir::internal
