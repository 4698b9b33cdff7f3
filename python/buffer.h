// ModelBuffer: a Python object's memory seen as the job's model, without a
// copy. Takes anything with the buffer protocol (numpy arrays, bytearray,
// array.array, memoryview) and CPU torch tensors (through Tensor.numpy(),
// which shares the tensor's storage), float32 or int32, C-contiguous, of any
// shape whose element count is the job's. Anything else is refused with a
// ValueError/TypeError naming what was expected and what was given.
//
// The buffer stays exported (and its object alive) for the ModelBuffer's
// lifetime, so the GIL may be released while the client reads or writes it.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace serene::python {

enum class Access { kRead, kWrite };
enum class ElementType { kFloat32, kInt32 };

class ModelBuffer {
 public:
  // `call` names the API for messages ("pull"); `expected` is the job's
  // element count (0: not known yet, not checked).
  static ModelBuffer Acquire(pybind11::handle object, Access access, size_t expected,
                             std::string_view call);

  ElementType type() const { return type_; }
  std::span<float> floats() const;
  std::span<int32_t> ints() const;
  size_t size() const { return size_; }

 private:
  ModelBuffer() = default;
  pybind11::object owner_;  // the object whose memory this is (a numpy view of a tensor)
  pybind11::buffer_info info_;
  ElementType type_ = ElementType::kFloat32;
  size_t size_ = 0;
};

}  // namespace serene::python
