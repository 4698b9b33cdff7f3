// serene.Client and its result types (JobInfo, ClockResult, ClientStats):
// the C++ worker client (include/serene/client.h) for Python.
#pragma once

#include <pybind11/pybind11.h>

namespace serene::python {

void BindClient(pybind11::module_& m);

}  // namespace serene::python
