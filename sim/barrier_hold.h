// BarrierHold: how long the switch's barrier held each rank — the waiting for
// other ranks, without the transfers (docs/simulator.md "Waiting").
//
// A rank is held from the moment the pipeline accepts its CLOCK but does not
// release it (Verdict::kWaiting: every INC of the clock is in, the barrier
// does not allow the rank on) until the switch emits the RELEASE that lets it
// go. Both ends are switch events, so neither the INCs queued on the uplink
// before the CLOCK nor the RELEASE's trip back count: under ASYNC a rank is
// never held. Clock 0 is setup (every rank waits for rank 0's initial model,
// before the run clocks start) and does not count. A rank that JOINs again after an eviction and
// finds the barrier closed (a CLOCK dropped as kClockWaiting) is held the same way.
//
// Not thread-safe: fed by the simulation's event loop.
#pragma once

#include <optional>
#include <vector>

#include "sim/event_queue.h"

namespace serene::sim {

class BarrierHold {
 public:
  explicit BarrierHold(int ranks) : since_(ranks), total_(ranks, 0) {}

  // The switch holds `rank` at the barrier from `now` (no-op if it already does).
  void Held(int rank, SimTime now) {
    if (!since_[rank]) since_[rank] = now;
  }
  bool held(int rank) const { return since_[rank].has_value(); }
  // The switch emitted a RELEASE to `rank` at `now`.
  void Released(int rank, SimTime now) {
    if (!since_[rank]) return;
    total_[rank] += now - *since_[rank];
    since_[rank].reset();
  }
  // Total time `rank` was held (releases seen so far).
  double seconds(int rank) const { return ToSeconds(total_[rank]); }

 private:
  std::vector<std::optional<SimTime>> since_;
  std::vector<SimTime> total_;
};

}  // namespace serene::sim
