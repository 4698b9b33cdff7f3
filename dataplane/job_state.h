// JobState: every register of one job, allocated once at job creation.
//
// This is the data plane's state, declared in one place (like katran's
// balancer_maps.h): the aggregation table (visible model + pending
// accumulator + per-row clock tag), per-(worker,row) exactly-once tags,
// per-worker registers, the barrier's waiting set, the two policy banks and
// the counters. Sizes are fixed by the JobConfig; nothing grows on the packet
// path. The stages (aggregation_table, barrier, policy_banks, membership)
// are free functions over this struct, like P4 controls over registers.
//
// Thread safety (the Pipeline takes the locks):
// - INC and READ hold `mu` shared and their row's stripe (`row_locks`), so
//   packets of different rows proceed in parallel on the switch's threads.
//   The stripe guards the row's registers: visible and pending values,
//   pending_clock[r] and every rank's inc_tag for the row. The registers
//   they write that are not per row are Relaxed (atomic): the counters, a
//   rank's last_seen and rows_this_clock, `saturated` (a burst of INCs adds
//   its counts once per hold: shared_tally.h). Everything else they only
//   read.
// - Every other packet (JOIN, CLOCK, LEAVE) and every control operation holds
//   `mu` exclusive and may touch any register.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "dataplane/counters.h"
#include "dataplane/job_config.h"
#include "dataplane/job_locks.h"
#include "dataplane/join_cookie.h"
#include "dataplane/relaxed.h"
#include "proto/endpoint.h"
#include "proto/packet.h"

namespace serene::dataplane {

// Registers of one rank.
struct WorkerRegs {
  uint32_t done = proto::kNoClock;  // last completed clock
  bool released = true;       // in clock done+1 (false: waiting for RELEASE of `done`)
  bool joined = false;        // has an address
  bool live = true;           // counts in the barrier (false after evict/leave)
  Relaxed<uint32_t> rows_this_clock = 0;  // distinct INC rows applied at clock done+1
  uint32_t release_epoch = 0;    // epoch of the bank that released `done`
  Timestamp wait_since = 0;      // when `done` was completed (valid while !released)
  Relaxed<Timestamp> last_seen = 0;  // last authenticated packet
  // Pace of the rank, for telemetry and policies (0 = no sample yet). Updated
  // once per completed clock with shifts only (EWMA, gain 1/8), like a P4
  // register action; reset when an evicted rank joins again.
  Timestamp released_at = 0;     // when the rank was last released (0: not since JOIN)
  Timestamp completed_at = 0;    // when the rank last completed a clock (0: not since JOIN)
  uint64_t iter_ns = 0;          // EWMA of the time between two completed clocks
  uint64_t work_ns = 0;          // EWMA of RELEASE -> next CLOCK: the rank's own step time
  uint64_t last_work_ns = 0;     // the last such sample
  proto::Endpoint addr;          // learned at JOIN: the rank's address
  // The switch's address the rank's JOIN reached (learned with `addr`):
  // RELEASEs no request of the rank asked for leave from it, so a worker on
  // a multi-homed switch hears from the address it talks to. Invalid when
  // the caller does not know it (Process without a local address).
  proto::Endpoint local;
  BasicWorkerCounters<Relaxed<uint64_t>> counters;
};

// One policy bank: barrier parameters and the epoch they were installed as.
struct PolicyBank {
  BarrierParams params;
  uint32_t epoch = 0;
};

// Bytes of registers a job of this geometry allocates (the table twice, the
// exactly-once tags, per-row and per-rank registers), for admission checks.
uint64_t JobStateBytes(const JobConfig& config);

struct JobState {
  JobState(const JobConfig& c, uint32_t incarnation, const CookieSecret& cookie_secret = {});
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;

  const JobConfig config;
  const uint32_t rows;
  // Drawn when the job is created (Pipeline::CreateJob); JOIN_ACK carries it
  // so a worker can tell a re-created job (a restarted switch) from a
  // delayed reply.
  const uint32_t incarnation;
  // The switch's secret for JOIN cookies (join_cookie.h), fixed with the
  // job; in P4, a register the control plane writes.
  const CookieSecret cookie_secret;

  // Aggregation table, element i of row r at r * row_width + i.
  std::vector<int32_t> visible;         // the model readers see
  std::vector<int32_t> pending;         // exact-mode INCs of clock pending_clock[r]
  std::vector<uint32_t> pending_clock;  // per row; kNoClock = pending holds nothing
  // Per row, 1 once the row completed and visible took pending in (the INC
  // that completed it folded it): visible - pending is then the model
  // before pending_clock[r]. Cleared with pending_clock.
  std::vector<uint8_t> pending_folded;
  // Per row: how many ranks' INCs of pending_clock[r] pending holds (a row
  // all N ranks INC'd is complete: aggregation_table.h).
  std::vector<uint32_t> pending_incs;
  // inc_tag[w * rows + r]: the clock at which rank w's INC of row r was last applied.
  std::vector<uint32_t> inc_tag;

  std::vector<WorkerRegs> workers;
  std::bitset<kMaxWorkers> waiting;  // ranks that completed `done` and wait for RELEASE

  // Hot swap: banks[active] judges clocks < swap_clock (all clocks when no
  // swap is pending); banks[active ^ 1] judges clocks >= swap_clock.
  std::array<PolicyBank, 2> banks;
  uint8_t active = 0;
  bool swap_pending = false;
  uint32_t swap_clock = 0;
  uint32_t next_epoch = 1;
  // Highest clock any rank has been released from (kNoClock: none yet).
  uint32_t max_released = proto::kNoClock;

  // Barrier summary over live ranks, refreshed (O(N)) whenever a `done` or
  // the membership changes, so the per-INC fold check is O(1).
  uint32_t low_all = proto::kNoClock;  // slowest live rank's completed clock
  uint32_t high = proto::kNoClock;     // fastest rank's completed clock
  uint32_t live_count = 0;

  // The barrier's order statistics, kept up to date by a CLOCK in O(1)
  // unless it moves the slowest live clock or the quorum clock (then O(N)),
  // so that a SYNC round costs O(N) instead of O(N^2) (barrier.cc). Valid
  // only between barrier evaluations while no policy change is pending and
  // the job is not finished; every other change of the ranks goes through a
  // full evaluation, which rebuilds it.
  struct BarrierIndex {
    bool valid = false;
    uint32_t low_k = 0;   // k-th highest `done` of the live ranks (k: the active bank's quorum)
    uint32_t n_low = 0;   // live ranks whose done == low_all
    uint32_t n_ge_k = 0;  // live ranks whose done >= low_k
    uint32_t n_at_k = 0;  // live ranks whose done == low_k
  };
  BarrierIndex index;

  Relaxed<bool> saturated = false;  // some addition was clamped
  bool finished = false;   // a rank ended the job: every CLOCK is released

  BasicJobCounters<Relaxed<uint64_t>> counters;

  // Scratch for the barrier's order statistics (no allocation per packet).
  std::array<int64_t, kMaxWorkers> scratch = {};

  mutable JobMutex mu;
  mutable RowStripes row_locks;

  uint32_t* TagsOf(uint32_t worker) { return inc_tag.data() + size_t{worker} * rows; }
  int32_t* VisibleRow(uint32_t r) { return visible.data() + size_t{r} * config.row_width; }
  int32_t* PendingRow(uint32_t r) { return pending.data() + size_t{r} * config.row_width; }
  const int32_t* VisibleRow(uint32_t r) const {
    return visible.data() + size_t{r} * config.row_width;
  }
  const int32_t* PendingRow(uint32_t r) const {
    return pending.data() + size_t{r} * config.row_width;
  }
};

}  // namespace serene::dataplane
