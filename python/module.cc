// The extension module serene._serene; the package python/serene/__init__.py
// re-exports it (docs/python.md).
#include <pybind11/pybind11.h>

#include "python/client_binding.h"
#include "python/errors.h"
#include "python/straggler_binding.h"

PYBIND11_MODULE(_serene, m) {
  m.doc() = "Serene's worker client (include/serene/client.h) for Python";
  serene::python::RegisterErrors(m);
  serene::python::BindClient(m);
  serene::python::BindStraggler(m);
}
