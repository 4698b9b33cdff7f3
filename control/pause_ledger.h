// PauseLedger: the time each rank reported spending outside its training
// steps (rank 0's evaluation of the test set, a checkpoint), through the
// runtime API's ReportPause. The switch sees such a pause only as a slow
// step that the other ranks wait for, like a straggler's; with this a policy
// can tell the two apart (docs/policies.md, `paused`).
//
// Control-plane state, kept beside the target (software switch, BMv2 or the
// simulator's pipeline) rather than in its data plane: no packet carries it.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "control/runtime.pb.h"

namespace serene::control {

class PauseLedger {
 public:
  struct Totals {
    uint64_t paused_ns = 0;
    uint64_t pauses = 0;
  };

  // Adds one pause of `ns` to the rank's totals and returns them.
  Totals Add(uint16_t job, uint32_t rank, uint64_t ns);
  // Drops the job's totals (the job was deleted or created again).
  void Forget(uint16_t job);
  // Sets paused_ns and pauses of the ranks of `t` (job `job`) that reported.
  void Fill(uint16_t job, v1::JobTelemetry* t) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<uint16_t, uint32_t>, Totals> totals_;
};

}  // namespace serene::control
