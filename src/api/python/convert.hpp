#pragma once
// Conversions shared by the binding files: dtypes, numpy arrays <-> tensors, Python callables
// that may be released on any thread.
#include <memory>
#include <string>
#include <string_view>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "weir/dtype.hpp"
#include "weir/tensor.hpp"

namespace weir::python {

namespace py = pybind11;

/// numpy dtype of a Weir dtype, and back (std::invalid_argument naming `what` when unsupported).
py::dtype NumpyDType(DType dtype);
DType FromNumpyDType(const py::dtype& dtype, std::string_view what);

/// A tensor that borrows the array's buffer. Only for calls that complete before the array can
/// change or die (sync calls, which keep the array referenced on the Python side).
Tensor BorrowArray(const py::array& array, std::string_view what);
/// A tensor holding a copy of the array (async calls, constants, variable values).
Tensor CopyArray(const py::array& array, std::string_view what);
/// A numpy array sharing the tensor's storage (no copy); the array keeps the storage alive. A bfloat16
/// tensor, which numpy cannot hold, comes back as a float32 copy (every bfloat16 is a float32).
py::array ToArray(const Tensor& tensor);

/// Owns a Python callable that C++ may copy and destroy on threads that do not hold the GIL
/// (actor threads, the callback thread); every copy, call and release takes the GIL itself.
class PyCallable {
 public:
  explicit PyCallable(py::object callable);
  /// The callable; use it only while holding the GIL.
  const py::object& Object() const { return *callable_; }

 private:
  std::shared_ptr<py::object> callable_;
};

}  // namespace weir::python
