// AggregateWorker: one rank of serene-bench. It pushes a known integer
// pattern for a number of clocks and checks every pull against the exact sum
// it can compute on its own, so a run both measures the system and proves
// that nothing was lost or applied twice.
//
// Pattern: rank 0 seeds the model, then each rank pushes UpdateCode's
// updates (update_code.h), so that every pull decodes into the (rank, clock)
// updates it holds. Every pull, under every policy, is checked against what
// the barrier guarantees at its clock: each rank's updates are its clocks
// 1..a, each once, with a = c - 1 for the pulling rank and for every rank
// under an exact policy (SYNC), and c - L - 1 <= a <= c + L under a lag
// bound L. After its last clock a rank keeps clocking with zero updates until
// every rank completed the last clock (RELEASE's low clock), then its final
// pull must hold every update.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "serene/client.h"

namespace serene::loadgen {

struct WorkerPlan {
  uint32_t clocks = 100;
  // What the policy guarantees a pull: exactly the clocks before it (SYNC's
  // exact reads), or every rank's clocks <= c - lag - 1 and none after
  // c + lag (kNoLagBound: none; ASYNC).
  static constexpr uint32_t kNoLagBound = 0xFFFFFFFFu;
  bool exact = true;
  uint32_t lag = 0;
  // Extra sleep before each step of this rank (a straggler), 0 = none.
  std::chrono::microseconds straggle{0};
};

// What one rank did, for the summary.
struct WorkerReport {
  uint32_t rank = 0;
  bool ok = false;
  std::string error;            // first failure
  uint32_t clocks = 0;          // clocks completed
  uint32_t pulls_checked = 0;   // pulls compared with the exact sum
  uint64_t elements = 0;
  double seconds = 0;           // wall time from JOIN to the final check
  double pull_seconds = 0;
  double push_seconds = 0;
  double clock_wait_seconds = 0;
  int64_t max_lead = 0;         // max over RELEASEs of clock - low
  ClientStats stats;

  std::string ToJson() const;
  static Result<WorkerReport> FromJson(const std::string& line);
};

int32_t Seed(size_t i);
// A simpler pattern (every rank adds to every element) for tests that
// compare whole models: rank w's update of clock c at element i.
int32_t Delta(uint32_t rank, uint32_t clock, size_t i);

// Joins, seeds, runs the plan and checks. Never throws.
WorkerReport RunAggregateWorker(const ClientOptions& options, const WorkerPlan& plan);

}  // namespace serene::loadgen
