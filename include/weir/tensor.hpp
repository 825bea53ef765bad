#pragma once
/// \file Owning, device-aware tensors: what users pass into and get out of a job call.
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"

namespace weir {

/// Where memory lives. CUDA devices come with the CUDA backend.
struct Device {
  enum class Kind : std::uint8_t { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int index = 0;

  static Device Cpu() { return {}; }
  static Device Cuda(int index) { return {Kind::kCuda, index}; }
  std::string ToString() const;
  friend bool operator==(const Device&, const Device&) = default;
};

/// A dense, row-major tensor that owns (or shares ownership of) its storage.
/// Copies share storage; Clone() makes a deep copy.
class Tensor {
 public:
  Tensor() = default;
  /// Allocates zero-filled storage on `device`.
  Tensor(Shape shape, DType dtype, Device device = Device::Cpu());
  /// Adopts `storage` (at least shape × dtype bytes on `device`) without copying; its deleter decides
  /// what releasing the tensor does (the Python binding lends numpy buffers this way).
  Tensor(Shape shape, DType dtype, Device device, std::shared_ptr<std::byte[]> storage);

  /// A CPU tensor holding `values`, which must have shape.NumElements() entries.
  template <typename T> static Tensor FromVector(Shape shape, const std::vector<T>& values);
  /// A CPU rank-0 tensor.
  template <typename T> static Tensor Scalar(T value) { return FromVector<T>(Shape{}, {value}); }

  const Shape& GetShape() const { return shape_; }
  DType GetDType() const { return dtype_; }
  Device GetDevice() const { return device_; }
  std::int64_t NumElements() const { return shape_.NumElements(); }
  std::size_t NumBytes() const { return static_cast<std::size_t>(NumElements()) * SizeOf(dtype_); }
  bool Defined() const { return storage_ != nullptr; }

  void* RawData() { return storage_.get(); }
  const void* RawData() const { return storage_.get(); }
  /// The storage itself (shared ownership), for views that alias part of it.
  const std::shared_ptr<std::byte[]>& SharedStorage() const { return storage_; }
  /// Typed access to CPU data; throws std::invalid_argument on a dtype mismatch.
  template <typename T> T* Data();
  template <typename T> const T* Data() const;
  template <typename T> std::vector<T> ToVector() const;

  Tensor Clone() const;
  /// "Tensor(f32, (2,3), [1, 2, 3, 4, 5, 6])"; long tensors are abbreviated.
  std::string ToString() const;

 private:
  void CheckDType(DType requested) const;

  Shape shape_;
  DType dtype_ = DType::kF32;
  Device device_;
  std::shared_ptr<std::byte[]> storage_;
};

template <typename T> Tensor Tensor::FromVector(Shape shape, const std::vector<T>& values) {
  if (static_cast<std::int64_t>(values.size()) != shape.NumElements()) {
    throw std::invalid_argument(fmt::format("[Tensor::FromVector] shape {} needs {} values, got {}",
                                            shape.ToString(), shape.NumElements(), values.size()));
  }
  Tensor tensor(std::move(shape), DTypeOf<T>());
  T* data = tensor.Data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return tensor;
}

template <typename T> T* Tensor::Data() {
  CheckDType(DTypeOf<T>());
  return reinterpret_cast<T*>(storage_.get());
}
template <typename T> const T* Tensor::Data() const {
  CheckDType(DTypeOf<T>());
  return reinterpret_cast<const T*>(storage_.get());
}
template <typename T> std::vector<T> Tensor::ToVector() const {
  const T* data = Data<T>();
  return std::vector<T>(data, data + NumElements());
}

}  // namespace weir

template <> struct fmt::formatter<weir::Tensor> : fmt::formatter<std::string_view> {
  template <typename Context> auto format(const weir::Tensor& tensor, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(tensor.ToString(), ctx);
  }
};
