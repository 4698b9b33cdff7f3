// Status -> Python exception: every failing C++ call raises serene.Error (or
// the subclass for its code) carrying the C++ message unchanged.
//
//   serene.Error                 RuntimeError      any failure
//   ├ InvalidArgumentError       + ValueError      a bad value (the message names it)
//   ├ DeadlineExceededError      + TimeoutError    no progress within the deadline
//   ├ UnavailableError           + ConnectionError the switch or the job is not there
//   ├ FailedPreconditionError                      a call out of order (pull before join)
//   └ ... one per remaining Status code (NotFound, AlreadyExists, IoError,
//         Internal, Unauthenticated, ResourceExhausted)
#pragma once

#include <pybind11/pybind11.h>

#include "common/status.h"

namespace serene::python {

// Creates the exception classes in `m`. Call once, from the module's init.
void RegisterErrors(pybind11::module_& m);

// Raises the exception for `status` (REQUIRES: !status.ok()).
[[noreturn]] void ThrowStatus(const Status& status);

// Convenience: returns if ok, raises otherwise.
inline void Check(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}
inline void Take(const Status& status) { Check(status); }
template <typename T>
T Take(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(*result);
}

}  // namespace serene::python
