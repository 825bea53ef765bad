// weir._C: the pybind11 extension under the pure-Python front end (python/weir). It maps the C++
// API one to one and holds no logic of its own.
#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "weir/dtype.hpp"

PYBIND11_MODULE(_C, m) {
  namespace py = pybind11;
  m.doc() = "Weir's C++ runtime (see include/weir); use it through the `weir` package.";
  py::enum_<weir::DType>(m, "DType")
      .value("float32", weir::DType::kF32)
      .value("float64", weir::DType::kF64)
      .value("int32", weir::DType::kI32)
      .value("int64", weir::DType::kI64)
      .value("uint8", weir::DType::kU8)
      .value("int8", weir::DType::kI8)
      .value("bool", weir::DType::kBool)
      .value("float16", weir::DType::kF16)
      .value("bfloat16", weir::DType::kBF16)
      .value("tensor_buffer", weir::DType::kTensorBuffer);
  m.def("numpy_dtype", &weir::python::NumpyDType, py::arg("dtype"));
  weir::python::BindJob(m);
  weir::python::BindTraining(m);
  weir::python::BindSession(m);
  weir::python::BindNn(m);
  weir::python::BindOps(m);
  weir::python::BindData(m);
}
