// Relaxed<T>: a register that several switch threads may update at once.
//
// INC and READ of one job run in parallel under the job's shared lock
// (job_state.h), so the few registers they write that are not per row —
// counters, a rank's last-seen time and rows-this-clock, the saturation flag —
// are relaxed atomics: each update is exact, but orders nothing else (the
// job's lock does). Copying reads the value, so the counter structs stay
// copyable.
#pragma once

#include <atomic>
#include <type_traits>

namespace serene::dataplane {

template <class T>
class Relaxed {
 public:
  Relaxed() = default;
  Relaxed(T v) : v_(v) {}  // NOLINT: implicit, like the plain register it replaces
  Relaxed(const Relaxed& o) : v_(o.load()) {}
  Relaxed& operator=(const Relaxed& o) {
    store(o.load());
    return *this;
  }
  Relaxed& operator=(T v) {
    store(v);
    return *this;
  }

  T load() const { return v_.load(std::memory_order_relaxed); }
  void store(T v) { v_.store(v, std::memory_order_relaxed); }
  operator T() const { return load(); }  // NOLINT: reads like the plain register

  Relaxed& operator++()
    requires std::is_integral_v<T>
  {
    v_.fetch_add(1, std::memory_order_relaxed);
    return *this;
  }
  Relaxed& operator+=(T d)
    requires std::is_integral_v<T>
  {
    v_.fetch_add(d, std::memory_order_relaxed);
    return *this;
  }
  // The same addition for a caller that excludes every other writer (it
  // holds the job's lock exclusive: CLOCK, JOIN, LEAVE, control): a plain
  // load and store, without the locked instruction (a full fence on x86)
  // that a concurrent update needs. Lost updates if misused: INC and READ
  // must use ++ and +=.
  void AddExclusive(T d)
    requires std::is_integral_v<T>
  {
    store(static_cast<T>(load() + d));
  }
  // Raises the value to `v` unless it is already at least `v` (a register's
  // max action): concurrent updates never move it back.
  void StoreMax(T v) {
    T cur = load();
    while (cur < v && !v_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<T> v_{};
};

}  // namespace serene::dataplane
