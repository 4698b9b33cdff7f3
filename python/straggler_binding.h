// serene.Straggler: serene-train's straggler patterns (train/straggler.h) for
// Python training loops, so a Python rank slows down exactly as a C++ one
// with the same pattern, rank and seed.
#pragma once

#include <pybind11/pybind11.h>

namespace serene::python {

void BindStraggler(pybind11::module_& m);

}  // namespace serene::python
