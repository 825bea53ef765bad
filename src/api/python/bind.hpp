#pragma once
// The parts of the weir._C module, one per binding file.
#include <string_view>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "weir/ops.hpp"

namespace weir::python {

void BindJob(pybind11::module_& m);
void BindTraining(pybind11::module_& m);
void BindSession(pybind11::module_& m);
void BindNn(pybind11::module_& m);

/// Binds a reduction op (reduce_sum, reduce_mean, reduce_max, reduce_min) as
/// name(x, axes, keep_dims=False, name="").
inline void DefReduction(pybind11::module_& m, const char* op, Blob (*reduce)(const Blob&, ReduceAttrs, std::string_view)) {
  namespace py = pybind11;
  m.def(
      op,
      [reduce](const Blob& x, std::vector<int> axes, bool keep_dims, std::string_view name) {
        return reduce(x, {std::move(axes), keep_dims}, name);
      },
      py::arg("x"), py::arg("axes"), py::arg("keep_dims") = false, py::arg("name") = "");
}

}  // namespace weir::python
