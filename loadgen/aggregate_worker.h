// AggregateWorker: one rank of serene-bench. It pushes a known integer
// pattern for a number of clocks and checks every pull against the exact sum
// it can compute on its own, so a run both measures the system and proves
// that nothing was lost or applied twice.
//
// Pattern: rank 0 seeds element i with Seed(i); at clock c >= 1 rank w adds
// Delta(w, c, i). Under an exact policy (SYNC) every pull at clock c must
// equal Seed + the deltas of clocks < c. Under any policy, after its last
// clock a rank keeps clocking with zero updates until every rank completed
// the last clock (RELEASE's low clock), then its final pull must equal the
// full sum.
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
  bool check_every_pull = true;  // only meaningful under an exact (SYNC) policy
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
int32_t Delta(uint32_t rank, uint32_t clock, size_t i);

// Joins, seeds, runs the plan and checks. Never throws.
WorkerReport RunAggregateWorker(const ClientOptions& options, const WorkerPlan& plan);

}  // namespace serene::loadgen
