#include "weir/tensor.hpp"

#include <cstring>

#include "common/allocator.hpp"
#include "common/stream.hpp"

namespace weir {

std::string Device::ToString() const {
  return kind == Kind::kCpu ? fmt::format("cpu:{}", index) : fmt::format("cuda:{}", index);
}

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)),
      dtype_(dtype),
      device_(device),
      storage_(internal::Allocate(device, static_cast<std::size_t>(shape_.NumElements()) * SizeOf(dtype))) {}

Tensor::Tensor(Shape shape, DType dtype, Device device, std::shared_ptr<std::byte[]> storage)
    : shape_(std::move(shape)), dtype_(dtype), device_(device), storage_(std::move(storage)) {
  if (storage_ == nullptr && shape_.NumElements() > 0) {
    throw std::invalid_argument(fmt::format("[Tensor] adopting null storage for a {} {} tensor", dtype_, shape_));
  }
}

void Tensor::CheckDType(DType requested) const {
  if (!Defined()) throw std::invalid_argument("[Tensor] access to an undefined tensor");
  if (requested != dtype_) {
    throw std::invalid_argument(fmt::format("[Tensor] element access as {} but the tensor holds {}", requested, dtype_));
  }
  if (device_.kind != Device::Kind::kCpu) {
    throw std::invalid_argument(fmt::format("[Tensor] host access to a tensor on {}", device_.ToString()));
  }
}

Tensor Tensor::Clone() const {
  if (!Defined()) return {};
  Tensor copy(shape_, dtype_, device_);
  internal::CopyBytes(copy.RawData(), device_, RawData(), device_, NumBytes());
  return copy;
}

namespace {

template <typename T> void AppendValues(std::string& out, const void* raw, std::int64_t count) {
  constexpr std::int64_t kShown = 8;
  const T* data = static_cast<const T*>(raw);
  for (std::int64_t i = 0; i < count; ++i) {
    if (count > 2 * kShown && i == kShown) {
      out += ", ...";
      i = count - kShown - 1;
      continue;
    }
    if (i > 0) out += ", ";
    if constexpr (std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int8_t>) {
      out += fmt::format("{}", static_cast<int>(data[i]));
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      out += fmt::format("{}", static_cast<float>(data[i]));
    } else {
      out += fmt::format("{}", data[i]);
    }
  }
}

}  // namespace

std::string Tensor::ToString() const {
  if (!Defined()) return "Tensor(undefined)";
  std::string out = fmt::format("Tensor({}, {}", dtype_, shape_);
  if (device_.kind != Device::Kind::kCpu) return out + fmt::format(", {})", device_.ToString());
  out += ", [";
  switch (dtype_) {
    case DType::kF32: AppendValues<float>(out, RawData(), NumElements()); break;
    case DType::kF64: AppendValues<double>(out, RawData(), NumElements()); break;
    case DType::kI32: AppendValues<std::int32_t>(out, RawData(), NumElements()); break;
    case DType::kI64: AppendValues<std::int64_t>(out, RawData(), NumElements()); break;
    case DType::kU8: AppendValues<std::uint8_t>(out, RawData(), NumElements()); break;
    case DType::kI8: AppendValues<std::int8_t>(out, RawData(), NumElements()); break;
    case DType::kBool: AppendValues<bool>(out, RawData(), NumElements()); break;
    case DType::kF16: AppendValues<float16>(out, RawData(), NumElements()); break;
    case DType::kBF16: AppendValues<bfloat16>(out, RawData(), NumElements()); break;
    case DType::kTensorBuffer: out += fmt::format("{} items", NumElements()); break;
  }
  return out + "])";
}

}  // namespace weir

namespace weir::internal {

std::string StreamId::ToString() const {
  static constexpr const char* kNames[] = {"control", "compute", "h2d", "d2h", "collective", "d2d"};
  return fmt::format("{}/{}{}", device.ToString(), kNames[static_cast<int>(kind)], index);
}

}  // namespace weir::internal
