#include "dataplane/job_locks.h"

#include <sched.h>

namespace serene::dataplane {
void JobMutex::LockSlow() {
  for (;;) {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & ~kWriterWaiting) == 0) {
      // Free. Taking it clears the flag; other waiting writers raise it again.
      if (state_.compare_exchange_weak(s, kWriter, std::memory_order_acquire)) return;
    } else if ((s & kWriterWaiting) == 0) {
      state_.fetch_or(kWriterWaiting, std::memory_order_relaxed);
    } else {
      state_.wait(s, std::memory_order_relaxed);
    }
  }
}

void JobMutex::LockSharedSlow() {
  for (;;) {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & (kWriter | kWriterWaiting)) == 0) {
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire)) return;
    } else {
      state_.wait(s, std::memory_order_relaxed);
    }
  }
}

void RowStripes::Pause(uint32_t* spins) {
  // A stripe is held for one row of work (~0.1-2 us): spin briefly, then
  // give the core away, since the holder may be preempted (more threads
  // than cores).
  if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

}  // namespace serene::dataplane
