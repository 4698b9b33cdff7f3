#include "common/secure_random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace serene {

namespace {

// Fills `*out` from getrandom(2); `what` names it in the error.
template <class T>
Status Draw(T* out, const char* what) {
  for (;;) {
    const ssize_t n = ::getrandom(out, sizeof *out, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof *out)) {
      return Status::Unavailable(std::string("cannot draw ") + what + " from getrandom(2): " +
                                 (n < 0 ? std::strerror(errno) : "short read"));
    }
    return Status::Ok();
  }
}

}  // namespace

Result<uint32_t> DrawJobKey() {
  for (;;) {
    uint32_t key = 0;
    Status s = Draw(&key, "a job key");
    if (!s.ok()) return s;
    if (key != 0) return key;
  }
}

Result<uint64_t> DrawSecret64() {
  uint64_t secret = 0;
  Status s = Draw(&secret, "a secret");
  if (!s.ok()) return s;
  return secret;
}

}  // namespace serene
