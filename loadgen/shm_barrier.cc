#include "loadgen/shm_barrier.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <string>

namespace serene::loadgen {
namespace {

// Shared (not FUTEX_PRIVATE): the word lives in memory several processes map.
long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

Result<std::unique_ptr<ShmBarrier>> ShmBarrier::Create(uint32_t parties) {
  if (parties == 0) return Status::InvalidArgument("a barrier needs at least one party");
  void* p = mmap(nullptr, sizeof(State), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status::IoError(std::string("mmap of the barrier's shared page: ") +
                           std::strerror(errno));
  }
  auto* s = new (p) State();
  s->parties = parties;
  return std::unique_ptr<ShmBarrier>(new ShmBarrier(s));
}

ShmBarrier::~ShmBarrier() {
  state_->~State();
  munmap(state_, sizeof(State));
}

Status ShmBarrier::Wait(std::chrono::nanoseconds timeout) {
  const uint32_t generation = state_->generation.load(std::memory_order_acquire);
  if (state_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == state_->parties) {
    // The last to arrive: reset for the next round before releasing this one
    // (nobody arrives for the next round before seeing the new generation).
    state_->arrived.store(0, std::memory_order_relaxed);
    state_->generation.fetch_add(1, std::memory_order_release);
    Futex(&state_->generation, FUTEX_WAKE, INT_MAX, nullptr);
    return Status::Ok();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (state_->generation.load(std::memory_order_acquire) == generation) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) {
      return Status::DeadlineExceeded(
          "barrier of " + std::to_string(state_->parties) + " processes: only " +
          std::to_string(state_->arrived.load(std::memory_order_relaxed)) + " arrived within " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
          " ms (a worker died or hangs)");
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    // Returns at once if the generation moved since the load (EAGAIN), on a
    // wake-up, a signal or the timeout; the loop re-checks.
    Futex(&state_->generation, FUTEX_WAIT, generation, &ts);
  }
  return Status::Ok();
}

}  // namespace serene::loadgen
