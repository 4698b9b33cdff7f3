// EventQueue: the virtual clock of the simulator (docs/simulator.md).
//
// Events are actions scheduled at a virtual time; Run pops them in time order
// and runs each with now() set to its time. Events at the same time run in
// the order they were scheduled, so a run is a pure function of its inputs:
// nothing here reads a real clock.
//
// Not thread-safe: one simulation, one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace serene::sim {

// Virtual time in nanoseconds since the start of the simulation.
using SimTime = int64_t;

inline constexpr SimTime kNever = INT64_MAX;

constexpr SimTime FromSeconds(double s) { return static_cast<SimTime>(s * 1e9 + 0.5); }
constexpr double ToSeconds(SimTime t) { return static_cast<double>(t) * 1e-9; }

class EventQueue {
 public:
  using Action = std::function<void()>;

  // Schedules `action` at `at` (clamped to now(): the past is gone).
  void At(SimTime at, Action action);
  void After(SimTime delay, Action action) { At(now_ + delay, std::move(action)); }

  // Runs the earliest event; false if there is none.
  bool RunNext();

  SimTime now() const { return now_; }
  size_t pending() const { return heap_.size(); }
  uint64_t executed() const { return executed_; }

 private:
  struct Event {
    SimTime at;
    uint64_t seq;
    Action action;
  };
  // std::push_heap keeps the largest first: "later" compares as smaller.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };

  std::vector<Event> heap_;
  SimTime now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t executed_ = 0;
};

}  // namespace serene::sim
