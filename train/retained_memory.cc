#include "train/retained_memory.h"

#include <malloc.h>

#include <string>

namespace serene::train {

namespace {

// glibc refuses an mmap threshold above half its heap size limit (32 MiB on
// 64-bit); the trim threshold has no limit but an int.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 1 << 30;

}  // namespace

Status RetainFreedMemory() {
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) != 1) {
    return Status::Internal("mallopt(M_MMAP_THRESHOLD, " + std::to_string(kMmapThreshold) +
                            ") refused by the C library");
  }
  if (mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1) {
    return Status::Internal("mallopt(M_TRIM_THRESHOLD, " + std::to_string(kTrimThreshold) +
                            ") refused by the C library");
  }
  return Status::Ok();
}

}  // namespace serene::train
