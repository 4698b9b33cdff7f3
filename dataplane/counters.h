// Counters of the data plane: why packets were dropped or refused, and what
// each job and worker did. Like a P4 counter array indexed by reason: every
// early exit of the pipeline increments exactly one reason.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "proto/codec.h"

namespace serene::dataplane {

// What Process() did with a packet.
enum class Verdict : uint8_t {
  kReplied,   // answered (JOIN_ACK, READ_REPLY, RELEASE, NACK, LEAVE)
  kApplied,   // INC added to the table (no reply)
  kWaiting,   // CLOCK accepted; the worker waits for its RELEASE
  kRefused,   // authenticated but refused: ERROR sent, nothing changed
  kDropped,   // dropped silently (bad packet, stranger, INC refused), nothing changed
};

// Why a packet was dropped or refused. kNone for packets that were served
// (except kFinishNotLive: the LEAVE is served, only its FINISHED flag is
// ignored). Packets failing magic/version/op/length are counted as
// proto::ParseError.
enum class DropReason : uint8_t {
  kNone = 0,
  kParse,           // see the ParseError counters
  kNotRequest,      // a reply op (JOIN_ACK, READ_REPLY, ...) sent to the switch
  kUnknownJob,      // no such job
  kBadKey,          // wrong key for the job
  kBadRank,         // worker >= N
  kNotJoined,       // rank never sent JOIN
  kWrongSource,     // rank joined from another address
  kEvicted,         // rank was evicted or left
  kBadRow,          // row index out of range
  kBadRowLength,    // INC count != the row's length
  kBadRowCount,     // CLOCK announces more rows than the job has
  kBadCount,        // JOIN/READ/CLOCK/LEAVE carrying values
  kBadClock,        // CLOCK/READ for a clock that is neither current nor last completed
  kNotReleased,     // READ while waiting for RELEASE
  kIncStale,        // INC for a clock the worker already completed (late duplicate)
  kIncEarly,        // INC for a clock the worker is not in yet
  kIncDuplicate,    // INC row already applied at this clock
  kIncSeedNotRank0, // INC at clock 0 from a rank other than 0
  kClockEarly,      // CLOCK for the next clock while still waiting
  kClockWaiting,    // retransmitted CLOCK while waiting (no reply, by design)
  kRankInUse,       // JOIN from another address while the rank is bound and live
  kFinishNotLive,   // LEAVE with FINISHED from a rank not live: answered, FINISHED ignored
  kSourceNotAllowed, // source outside the job's allow-list: dropped silently
  kJoinCookie,      // JOIN from an unverified source without a valid cookie: COOKIE sent
  kCount_,
};
inline constexpr size_t kNumDropReasons = static_cast<size_t>(DropReason::kCount_);

std::string_view DropReasonName(DropReason r);

// Counters of one rank. `Count` is uint64_t in snapshots (telemetry) and
// Relaxed<uint64_t> in the job's registers, which INC and READ of several
// switch threads update at once (job_state.h).
template <class Count>
struct BasicWorkerCounters {
  Count joins = 0;
  Count reads = 0;
  Count incs_applied = 0;
  Count incs_duplicate = 0;  // INC rows already applied (retransmissions)
  Count clocks = 0;          // CLOCKs that completed a clock
  Count clock_retransmits = 0;  // CLOCKs for the clock already completed
  Count nacks = 0;
  Count releases = 0;
  Count errors = 0;          // ERROR replies sent to this rank
  Count wait_ns = 0;         // total time between completing a clock and its RELEASE
  Count evictions = 0;       // times the rank was taken out of the barrier (evict or LEAVE)

  BasicWorkerCounters() = default;
  // A copy of counters of another count type (registers <-> snapshot).
  template <class Other>
  explicit BasicWorkerCounters(const BasicWorkerCounters<Other>& o)
      : joins(o.joins), reads(o.reads), incs_applied(o.incs_applied),
        incs_duplicate(o.incs_duplicate), clocks(o.clocks),
        clock_retransmits(o.clock_retransmits), nacks(o.nacks), releases(o.releases),
        errors(o.errors), wait_ns(o.wait_ns), evictions(o.evictions) {}
};
using WorkerCounters = BasicWorkerCounters<uint64_t>;

// Counters of one job; `Count` as for BasicWorkerCounters.
template <class Count>
struct BasicJobCounters {
  std::array<Count, proto::kMaxOp + 1> rx_by_op = {};  // authenticated packets, by op
  std::array<Count, kNumDropReasons> drops = {};       // by reason
  Count saturations = 0;  // values clamped to the int32 range (additions, live reads)
  Count folds = 0;        // pending rows folded into the visible model
  Count completed_rows = 0;  // rows sent to the reply group by the INC completing them
  Count releases = 0;
  Count nacks = 0;
  Count errors = 0;
  Count swaps = 0;        // policy bank flips

  BasicJobCounters() = default;
  template <class Other>
  explicit BasicJobCounters(const BasicJobCounters<Other>& o)
      : saturations(o.saturations), folds(o.folds), completed_rows(o.completed_rows),
        releases(o.releases), nacks(o.nacks), errors(o.errors), swaps(o.swaps) {
    for (size_t i = 0; i < rx_by_op.size(); ++i) rx_by_op[i] = o.rx_by_op[i];
    for (size_t i = 0; i < drops.size(); ++i) drops[i] = o.drops[i];
  }
};
using JobCounters = BasicJobCounters<uint64_t>;

// Counters of packets that could not be attributed to a job.
struct GlobalCounters {
  uint64_t packets = 0;
  std::array<uint64_t, proto::kNumParseErrors> parse_errors = {};
  uint64_t unknown_job = 0;
  uint64_t not_request = 0;
  uint64_t bad_key = 0;
};

}  // namespace serene::dataplane
