#include "python/buffer.h"

#include <string>

namespace serene::python {
namespace py = pybind11;
namespace {

std::string TypeName(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__qualname__"));
}

// Whether `object` is a torch.Tensor (or a subclass: nn.Parameter), without
// importing torch.
bool IsTorchTensor(py::handle object) {
  for (py::handle type : py::type::handle_of(object).attr("__mro__")) {
    if (py::str(type.attr("__module__")).cast<std::string>() == "torch" &&
        py::str(type.attr("__qualname__")).cast<std::string>() == "Tensor") {
      return true;
    }
  }
  return false;
}

[[noreturn]] void Refuse(PyObject* exception, std::string_view call, const std::string& what) {
  std::string message = std::string(call) + ": " + what;
  PyErr_SetString(exception, message.c_str());
  throw py::error_already_set();
}

// A CPU tensor's storage as a numpy array (no copy), or a clear refusal.
py::object TensorAsArray(py::handle tensor, std::string_view call) {
  std::string device = py::str(tensor.attr("device").attr("type"));
  if (device != "cpu") {
    Refuse(PyExc_ValueError, call,
           "the tensor is on device '" + device + "'; pass a CPU tensor (tensor.cpu())");
  }
  if (!tensor.attr("is_contiguous")().cast<bool>()) {
    Refuse(PyExc_ValueError, call,
           "the tensor is not contiguous; pass tensor.contiguous() (a pull must write in place)");
  }
  std::string dtype = py::str(tensor.attr("dtype"));
  if (dtype != "torch.float32" && dtype != "torch.int32") {
    Refuse(PyExc_TypeError, call,
           "expected a float32 or int32 tensor, got " + dtype + " (tensor.float())");
  }
  // detach(): numpy() refuses tensors that require grad; the view shares memory.
  return tensor.attr("detach")().attr("numpy")();
}

bool IsCContiguous(const py::buffer_info& info) {
  py::ssize_t stride = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] != 1 && info.strides[d] != stride) return false;
    stride *= info.shape[d];
  }
  return true;
}

}  // namespace

ModelBuffer ModelBuffer::Acquire(py::handle object, Access access, size_t expected,
                                 std::string_view call) {
  ModelBuffer buffer;
  if (IsTorchTensor(object)) {
    buffer.owner_ = TensorAsArray(object, call);
  } else if (PyObject_CheckBuffer(object.ptr())) {
    buffer.owner_ = py::reinterpret_borrow<py::object>(object);
  } else {
    Refuse(PyExc_TypeError, call,
           "expected a numpy array, a CPU torch tensor or another object with the buffer "
           "protocol (float32 or int32), got " +
               TypeName(object));
  }
  const bool writable = access == Access::kWrite;
  try {
    buffer.info_ = py::reinterpret_borrow<py::buffer>(buffer.owner_).request(writable);
  } catch (py::error_already_set& e) {
    if (writable && e.matches(PyExc_BufferError)) {
      Refuse(PyExc_ValueError, call,
             "the buffer is read-only; it receives the model, so pass a writable one");
    }
    throw;
  }
  const py::buffer_info& info = buffer.info_;
  // Formats may carry a byte-order prefix ('<f', '=i'); native order only.
  std::string format = info.format;
  if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@')) {
    format = format.substr(1);
  }
  if (format == "f" && info.itemsize == 4) {
    buffer.type_ = ElementType::kFloat32;
  } else if ((format == "i" || format == "l") && info.itemsize == 4) {
    buffer.type_ = ElementType::kInt32;
  } else {
    Refuse(PyExc_TypeError, call,
           "expected float32 or int32 elements, got format '" + info.format + "' of " +
               std::to_string(info.itemsize) + " bytes (numpy: astype(numpy.float32))");
  }
  if (!IsCContiguous(info)) {
    Refuse(PyExc_ValueError, call,
           "the buffer is not C-contiguous; pass numpy.ascontiguousarray(x) or x.contiguous()");
  }
  buffer.size_ = static_cast<size_t>(info.size);
  if (expected != 0 && buffer.size_ != expected) {
    Refuse(PyExc_ValueError, call,
           "expected " + std::to_string(expected) + " elements (the job's model), got " +
               std::to_string(buffer.size_));
  }
  return buffer;
}

std::span<float> ModelBuffer::floats() const { return {static_cast<float*>(info_.ptr), size_}; }

std::span<int32_t> ModelBuffer::ints() const { return {static_cast<int32_t*>(info_.ptr), size_}; }

}  // namespace serene::python
