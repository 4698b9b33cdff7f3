// Telemetry: a consistent snapshot of one job, taken under the job's lock.
// This is what the runtime API serves and what policies see.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "dataplane/counters.h"
#include "dataplane/job_config.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

struct WorkerTelemetry {
  uint32_t rank = 0;
  uint32_t done = 0;          // last completed clock (kNoClock: none)
  bool joined = false;
  bool live = false;
  bool waiting = false;       // completed `done`, waiting for RELEASE
  uint32_t rows_this_clock = 0;  // distinct INC rows applied at clock done+1
  Timestamp wait_since = 0;   // valid while waiting
  Timestamp last_seen = 0;    // last authenticated packet (0: never)
  Timestamp completed_at = 0; // last completed clock (0: none since JOIN)
  uint64_t iter_ns = 0;       // EWMA of the time between completed clocks (0: no sample)
  uint64_t work_ns = 0;       // EWMA of RELEASE -> next CLOCK, waiting excluded (0: no sample)
  uint64_t last_work_ns = 0;  // the last RELEASE -> CLOCK sample
  proto::Endpoint addr;
  proto::Endpoint local;      // the switch address the rank's JOIN reached (invalid: unknown)
  WorkerCounters counters;
};

struct JobTelemetry {
  JobConfig config;
  uint32_t rows = 0;
  uint32_t live_workers = 0;
  uint32_t low = 0;           // slowest live worker's completed clock (low_all)
  uint32_t high = 0;          // fastest worker's completed clock
  BarrierParams active;       // bank judging clocks < swap_clock
  uint32_t active_epoch = 0;
  bool swap_pending = false;  // a new bank is installed, old not yet retired
  BarrierParams next;         // valid while swap_pending
  uint32_t next_epoch = 0;
  uint32_t swap_clock = 0;
  uint32_t max_released = 0;
  bool saturated = false;
  bool finished = false;
  JobCounters counters;
  std::vector<WorkerTelemetry> workers;
};

// Result of installing a policy (hot swap).
struct PolicyChange {
  uint32_t epoch = 0;         // epoch of the new bank; RELEASEs judged by it carry it
  uint32_t effective_clock = 0;  // CLOCK(c) with c >= this is judged by the new bank
};

}  // namespace serene::dataplane
