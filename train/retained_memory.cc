#include "train/retained_memory.h"

#include <malloc.h>

#include <string>

namespace serene::train {

Status RetainFreedMemory() {
  // glibc refuses an mmap threshold above half its heap size limit (32 MiB
  // on 64-bit); the trim threshold has no limit but an int.
  struct Setting {
    int param;
    int value;
    const char* name;
  };
  for (const Setting& s : {Setting{M_MMAP_THRESHOLD, 32 << 20, "M_MMAP_THRESHOLD"},
                           Setting{M_TRIM_THRESHOLD, 1 << 30, "M_TRIM_THRESHOLD"}}) {
    if (mallopt(s.param, s.value) != 1) {
      return Status::Internal(std::string("mallopt(") + s.name + ", " + std::to_string(s.value) +
                              ") refused by the C library");
    }
  }
  return Status::Ok();
}

}  // namespace serene::train
