#pragma once
// The parts of the weir._C module, one per binding file.
#include <pybind11/pybind11.h>

namespace weir::python {

void BindJob(pybind11::module_& m);
void BindTraining(pybind11::module_& m);
void BindSession(pybind11::module_& m);
void BindNn(pybind11::module_& m);

}  // namespace weir::python
