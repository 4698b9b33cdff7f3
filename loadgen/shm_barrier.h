// ShmBarrier: a barrier for the processes RunChildren forks on this host, in
// an anonymous shared mapping made before the fork.
//
// serene-bench comm puts one around every timed phase. It used Gloo's
// barrier, whose TCP loop thread spins (epoll_wait returning the same
// readable socket ~40,000 times a second) while a peer's barrier message
// waits for this rank to enter the barrier: a rank still in its timed phase
// lost up to a core to its own Gloo thread while the ranks that finished
// first waited for it. Here a waiter sleeps on a futex and the last to
// arrive wakes them.
//
// Every wait ends: Wait() gives up after its timeout (a peer that died or
// hangs), naming how many had arrived. Reusable: each round bumps a
// generation that the sleepers wait on (a central sense-reversing barrier).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "common/status.h"

namespace serene::loadgen {

class ShmBarrier {
 public:
  // REQUIRES: called before the fork; `parties` >= 1.
  static Result<std::unique_ptr<ShmBarrier>> Create(uint32_t parties);
  ~ShmBarrier();
  ShmBarrier(const ShmBarrier&) = delete;
  ShmBarrier& operator=(const ShmBarrier&) = delete;

  // Returns once all `parties` processes called Wait() for this round;
  // DeadlineExceeded after `timeout`.
  Status Wait(std::chrono::nanoseconds timeout);

 private:
  struct State {
    std::atomic<uint32_t> arrived{0};
    std::atomic<uint32_t> generation{0};  // futex word
    uint32_t parties = 0;
  };
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  explicit ShmBarrier(State* s) : state_(s) {}
  State* state_;
};

}  // namespace serene::loadgen
