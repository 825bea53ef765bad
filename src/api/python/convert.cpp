#include "api/python/convert.hpp"

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace weir::python {

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return py::dtype::of<float>();
    case DType::kF64: return py::dtype::of<double>();
    case DType::kI32: return py::dtype::of<std::int32_t>();
    case DType::kI64: return py::dtype::of<std::int64_t>();
    case DType::kU8: return py::dtype::of<std::uint8_t>();
    case DType::kI8: return py::dtype::of<std::int8_t>();
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kF16: return py::dtype("float16");
    // numpy has no bfloat16: its values reach Python widened to float32 (exactly; see ToArray).
    case DType::kBF16: return py::dtype::of<float>();
    case DType::kTensorBuffer:
      throw std::invalid_argument(
          "[weir._C] a tensor_buffer (records, decoded images) has no numpy dtype: decode it into a tensor first "
          "(flow.data.OFRecordRawDecoder, flow.image.Resize, flow.image.CropMirrorNormalize)");
  }
  throw std::invalid_argument("[weir._C] unknown dtype");
}

DType FromNumpyDType(const py::dtype& dtype, std::string_view what) {
  for (DType candidate : kAllDTypes) {
    if (candidate == DType::kBF16) continue;  // float32 arrays are float32
    if (NumpyDType(candidate).is(dtype) || NumpyDType(candidate).equal(dtype)) return candidate;
  }
  throw std::invalid_argument(fmt::format("{}: numpy dtype {} has no Weir dtype (float32, float64, float16, int32, int64, int8, uint8, bool)",
                                          what, py::str(static_cast<const py::object&>(dtype)).cast<std::string>()));
}

namespace {

Shape ArrayShape(const py::array& array) {
  std::vector<std::int64_t> dims(array.shape(), array.shape() + array.ndim());
  return Shape(std::move(dims));
}

}  // namespace

Tensor BorrowArray(const py::array& array, std::string_view what) {
  const DType dtype = FromNumpyDType(array.dtype(), what);
  if (!(array.flags() & py::array::c_style)) {
    throw std::invalid_argument(fmt::format("{}: expected a C-contiguous array", what));
  }
  // No-op deleter: the caller keeps the array alive until the call has completed.
  auto* data = static_cast<std::byte*>(const_cast<void*>(array.data()));
  return Tensor(ArrayShape(array), dtype, Device::Cpu(), std::shared_ptr<std::byte[]>(data, [](std::byte*) {}));
}

Tensor CopyArray(const py::array& array, std::string_view what) {
  const DType dtype = FromNumpyDType(array.dtype(), what);
  const py::array contiguous = py::array::ensure(array, py::array::c_style);
  Tensor tensor(ArrayShape(contiguous), dtype);
  if (tensor.NumBytes() > 0) std::memcpy(tensor.RawData(), contiguous.data(), tensor.NumBytes());
  return tensor;
}

py::array ToArray(const Tensor& tensor) {
  std::vector<py::ssize_t> shape(tensor.GetShape().Dims().begin(), tensor.GetShape().Dims().end());
  if (tensor.GetDType() == DType::kBF16) {
    py::array_t<float> widened(shape);
    const auto* from = static_cast<const bfloat16*>(tensor.RawData());
    float* to = widened.mutable_data();
    for (std::int64_t i = 0; i < tensor.NumElements(); ++i) to[i] = from[i];
    return widened;
  }
  // The capsule owns a copy of the tensor handle, so the storage lives as long as the array.
  auto* owner = new Tensor(tensor);
  py::capsule capsule(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(NumpyDType(tensor.GetDType()), shape, tensor.RawData(), capsule);
}

PyCallable::PyCallable(py::object callable)
    : callable_(new py::object(std::move(callable)), [](py::object* object) {
        // Released on whichever thread drops the last copy; at interpreter exit Python may be gone.
        if (Py_IsInitialized() != 0) {
          py::gil_scoped_acquire gil;
          delete object;
        } else {
          object->release();
          delete object;
        }
      }) {}


}  // namespace weir::python
