// weir._C.add_op: every op of the registry from Python, with its attributes by name (each op's file
// reads them: OpDef::read_attrs). The Python wrappers (python/weir) call it; no op has a binding of
// its own.
#include <Python.h>

#include <pybind11/stl.h>

#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "graph/op_registry.hpp"
#include "graph/quantization_pass.hpp"

namespace weir::python {

namespace {

using internal::AttrMap;
using internal::AttrValue;

[[noreturn]] void Unconvertible(std::string_view op_type, std::string_view name, const py::handle& value) {
  throw std::invalid_argument(fmt::format(
      "[{}] attribute '{}': expected None, a bool, an int, a float, a str, a dtype or a list of numbers, got {}",
      op_type, name, py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
}

// An int, or anything else with __index__ (numpy's integers) but a float, a bool or a dtype (whose
// enum has __index__ too).
bool IsInteger(const py::handle& value) {
  PyObject* object = value.ptr();
  if (PyBool_Check(object) || py::isinstance<DType>(value)) return false;
  return PyLong_Check(object) || (PyIndex_Check(object) && !PyFloat_Check(object));
}

std::int64_t ToInteger(const py::handle& value) {
  return py::int_(py::reinterpret_borrow<py::object>(value)).cast<std::int64_t>();
}

AttrValue ToAttrValue(std::string_view op_type, std::string_view name, const py::handle& value) {
  PyObject* object = value.ptr();
  if (value.is_none()) return std::monostate{};
  if (PyBool_Check(object)) return value.cast<bool>();
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  if (IsInteger(value)) return ToInteger(value);
  if (PyFloat_Check(object)) return value.cast<double>();
  if (PyUnicode_Check(object)) return value.cast<std::string>();
  if (PyList_Check(object) || PyTuple_Check(object)) {
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
    bool all_ints = true;
    for (const py::handle item : value) {
      if (IsInteger(item)) {
        ints.push_back(ToInteger(item));
        floats.push_back(static_cast<double>(ints.back()));
      } else if (PyFloat_Check(item.ptr())) {
        all_ints = false;
        floats.push_back(item.cast<double>());
      } else {
        Unconvertible(op_type, name, item);
      }
    }
    if (all_ints) return ints;
    return floats;
  }
  Unconvertible(op_type, name, value);
}

AttrMap ToAttrMap(std::string_view type, const py::dict& attrs) {
  AttrMap map;
  for (const auto& [key, value] : attrs) {
    const std::string attr = py::str(key);
    map.emplace(attr, ToAttrValue(type, attr, value));
  }
  return map;
}

}  // namespace

void BindOps(py::module_& m) {
  m.def(
      "add_op",
      [](const std::string& type, const std::vector<Blob>& inputs, const py::dict& attrs, std::string_view name) {
        return internal::AddOpByName(type, inputs, ToAttrMap(type, attrs), name);
      },
      py::arg("type"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("name") = "",
      "Adds op `type` to the job of `inputs`; returns its outputs.");
  m.def(
      "add_source_op",
      [](const JobBuilder& job, const std::string& type, const py::dict& attrs, std::string_view name) {
        return internal::AddSourceOpByName(job, type, ToAttrMap(type, attrs), name);
      },
      py::arg("job"), py::arg("type"), py::arg("attrs") = py::dict(), py::arg("name") = "",
      "Adds op `type`, which has no inputs (a reader, random draws), to `job`; returns its outputs.");
  // flow.quantization's observers: the functions the quantization-aware-training pass builds with.
  m.def(
      "min_max_observer",
      [](const Blob& x, int bits, bool affine, bool cambricon, bool per_layer) {
        const auto [scale, zero_point] = internal::MinMaxObserver(x, {bits, affine, cambricon}, per_layer);
        return py::make_tuple(scale, zero_point);
      },
      py::arg("x"), py::arg("bits"), py::arg("affine"), py::arg("cambricon"), py::arg("per_layer"));
  m.def(
      "moving_average_observer",
      [](const Blob& x, int bits, bool affine, bool cambricon, double momentum, const std::string& max_name,
         const std::string& min_name, bool training) {
        const auto [scale, zero_point] =
            internal::MovingAverageObserver(x, {bits, affine, cambricon}, momentum, max_name, min_name, training);
        return py::make_tuple(scale, zero_point);
      },
      py::arg("x"), py::arg("bits"), py::arg("affine"), py::arg("cambricon"), py::arg("momentum"),
      py::arg("max_name"), py::arg("min_name"), py::arg("training"));
  // The kinds of the unary and scalar ops, in enum order (weir/op_kinds.hpp).
  m.attr("unary_kinds") = std::vector<std::string>(std::begin(kUnaryOpKindNames), std::end(kUnaryOpKindNames));
  m.attr("scalar_kinds") = std::vector<std::string>(std::begin(kScalarOpKindNames), std::end(kScalarOpKindNames));
  m.def(
      "op_inputs",
      [](const std::string& type) {
        const internal::OpDef& def = internal::FindOp(type);
        return py::make_tuple(def.num_inputs, std::vector<std::string>(def.input_names.begin(), def.input_names.end()));
      },
      py::arg("type"),
      "(number of inputs, -1 for any; their names) of registered op `type`; ValueError for an unknown type.");
  m.def("registered_ops", [] {
    std::vector<std::string> types;
    for (std::string_view type : internal::RegisteredOpTypes()) types.emplace_back(type);
    return types;
  });
}

}  // namespace weir::python
