#include "python/errors.h"

#include <Python.h>

#include <array>
#include <utility>

namespace serene::python {
namespace py = pybind11;
namespace {

using Code = Status::Code;

struct ErrorClass {
  Code code;
  const char* name;
  PyObject* extra_base;  // a builtin exception it also derives from, or nullptr
  PyObject* type = nullptr;
};

// Indexed by nothing in particular; looked up by code (a dozen entries).
std::array<ErrorClass, 10>& Classes() {
  static std::array<ErrorClass, 10> classes = {{
      {Code::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {Code::kNotFound, "NotFoundError", PyExc_LookupError},
      {Code::kAlreadyExists, "AlreadyExistsError", nullptr},
      {Code::kFailedPrecondition, "FailedPreconditionError", nullptr},
      {Code::kUnavailable, "UnavailableError", PyExc_ConnectionError},
      {Code::kDeadlineExceeded, "DeadlineExceededError", PyExc_TimeoutError},
      {Code::kIoError, "IoError", PyExc_OSError},
      {Code::kInternal, "InternalError", nullptr},
      {Code::kUnauthenticated, "UnauthenticatedError", PyExc_PermissionError},
      {Code::kResourceExhausted, "ResourceExhaustedError", nullptr},
  }};
  return classes;
}

PyObject* g_base_error = nullptr;

PyObject* NewClass(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("serene._serene.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  // The module keeps a reference for as long as it lives.
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void RegisterErrors(py::module_& m) {
  g_base_error = NewClass(m, "Error", PyExc_RuntimeError,
                          "A Serene call failed; the message is the C++ client's.");
  for (ErrorClass& c : Classes()) {
    py::tuple bases = c.extra_base != nullptr
                          ? py::make_tuple(py::handle(g_base_error), py::handle(c.extra_base))
                          : py::make_tuple(py::handle(g_base_error));
    c.type = NewClass(m, c.name, bases.ptr(), nullptr);
  }
}

void ThrowStatus(const Status& status) {
  PyObject* type = g_base_error;
  for (const ErrorClass& c : Classes()) {
    if (c.code == status.code()) type = c.type;
  }
  PyErr_SetString(type, status.message().c_str());
  throw py::error_already_set();
}

}  // namespace serene::python
