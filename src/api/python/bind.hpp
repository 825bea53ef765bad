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
void BindOps(pybind11::module_& m);
void BindData(pybind11::module_& m);

}  // namespace weir::python
