#include "common/secure_random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace serene {

Result<uint32_t> DrawJobKey() {
  for (;;) {
    uint32_t key = 0;
    const ssize_t n = ::getrandom(&key, sizeof key, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof key)) {
      return Status::Unavailable(std::string("cannot draw a job key from getrandom(2): ") +
                                 (n < 0 ? std::strerror(errno) : "short read"));
    }
    if (key != 0) return key;
  }
}

}  // namespace serene
