// The locks of one job (job_state.h explains what each guards).
//
// JobMutex: a reader-writer lock that prefers writers. INC and READ take it
// shared, every other packet and control operation exclusive. One atomic
// word: each lock and unlock is one atomic read-modify-write when nobody
// waits (glibc's rwlock, std::shared_mutex, costs two to four and doubled
// the cost of a small packet). A writer that waits raises a flag that stops
// new readers, so a CLOCK is not held back by a stream of INCs on other
// threads; waiters sleep on the word (C++20 atomic wait: a futex).
//
// RowStripes: a fixed array of small spin locks, row r guarded by stripe
// r % kRowStripes, allocated with the job. An INC or READ holds its row's
// stripe for one row of work (≤ 16368 values), the analogue of a switch
// pipeline's per-register atomicity; a holder that is preempted makes the
// waiter yield instead of burning the core.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <new>

namespace serene::dataplane {

class JobMutex {
 public:
  JobMutex() = default;
  JobMutex(const JobMutex&) = delete;
  JobMutex& operator=(const JobMutex&) = delete;

  void lock() {
    uint32_t s = 0;
    if (!state_.compare_exchange_strong(s, kWriter, std::memory_order_acquire)) LockSlow();
  }
  void unlock() {
    // A read-modify-write, not a store: it orders the waiter check in
    // notify_all after the release (else a waiter could miss its wake-up).
    state_.exchange(0, std::memory_order_seq_cst);
    state_.notify_all();  // a load when nobody waits
  }
  void lock_shared() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & (kWriter | kWriterWaiting)) != 0 ||
        !state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire)) {
      LockSharedSlow();
    }
  }
  void unlock_shared() {
    // The last reader out wakes the writer waiting for it.
    if (state_.fetch_sub(1, std::memory_order_seq_cst) - 1 == kWriterWaiting) state_.notify_all();
  }
  // A writer waits for the readers to leave: a reader that holds the lock
  // across several packets (Pipeline::Burst) lets it in.
  bool writer_waiting() const {
    return (state_.load(std::memory_order_relaxed) & kWriterWaiting) != 0;
  }

 private:
  static constexpr uint32_t kWriter = 1u << 31;         // a writer holds the lock
  static constexpr uint32_t kWriterWaiting = 1u << 30;  // a writer waits: no new readers
  // Low bits: the number of readers holding the lock.

  void LockSlow();
  void LockSharedSlow();

  std::atomic<uint32_t> state_{0};
};

class RowStripes {
 public:
  static constexpr uint32_t kRowStripes = 64;

  void Lock(uint32_t row) {
    std::atomic<bool>& f = stripes_[row % kRowStripes].held;
    for (uint32_t spins = 0; f.exchange(true, std::memory_order_acquire);) {
      while (f.load(std::memory_order_relaxed)) Pause(&spins);
    }
  }
  void Unlock(uint32_t row) { stripes_[row % kRowStripes].held.store(false, std::memory_order_release); }

 private:
  static void Pause(uint32_t* spins);

  // One cache line per stripe: threads on different rows do not share lines.
  struct alignas(64) Stripe {
    std::atomic<bool> held{false};
  };
  std::array<Stripe, kRowStripes> stripes_;
};

// Holds row `row`'s stripe for a scope.
class RowGuard {
 public:
  RowGuard(RowStripes& s, uint32_t row) : s_(s), row_(row) { s_.Lock(row_); }
  ~RowGuard() { s_.Unlock(row_); }
  RowGuard(const RowGuard&) = delete;
  RowGuard& operator=(const RowGuard&) = delete;

 private:
  RowStripes& s_;
  const uint32_t row_;
};

}  // namespace serene::dataplane
