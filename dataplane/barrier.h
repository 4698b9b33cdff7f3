// Barrier stage: the hybrid stale-synchronous barrier (DESIGN.md §4).
//
// A rank that completed clock c may start c+1 iff
//   c - low_k   <= W   (low_k: highest clock at least k live ranks completed)
//   c - low_all <= L   (low_all: slowest live rank's completed clock)
// judged by the bank in force for c, and clock 0 (seeding) is released only
// when every live rank completed it. The waiting set is a bitmap, so a
// retransmitted CLOCK cannot queue a rank twice. Whenever a `done`, the
// membership or the policy changes, every waiting rank is re-evaluated and
// every eligible one released at once: one pass over the job's ranks,
// bounded by kMaxWorkers. A CLOCK, the common change, is cheaper: it only
// re-evaluates the other waiting ranks when it moved the slowest live clock
// or the quorum clock, which eligibility depends on (ReleaseAfterClock), so
// a SYNC round of N ranks costs O(N), not O(N^2).
//
// REQUIRES: the caller holds job.mu exclusive.
#pragma once

#include <cstdint>

#include "dataplane/job_state.h"
#include "dataplane/output.h"

namespace serene::dataplane {

// Recomputes job.low_all, job.high and job.live_count from the ranks.
void RefreshSummary(JobState& job);

// Marks `worker` as having completed clock `clock` and waiting.
void CompleteClock(JobState& job, uint32_t worker, uint32_t clock, Timestamp now);

// Refreshes the summary, retires the old policy bank if it can, and releases
// every waiting rank that is now eligible (RELEASE into `out`).
// Returns the number of ranks released.
uint32_t ReleaseEligible(JobState& job, Timestamp now, Output* out);

// After CompleteClock(job, worker, ...) moved the rank from `prev_done`:
// the same as ReleaseEligible, in O(1) unless the slowest live clock or the
// quorum clock moved (then one pass over the waiting ranks). Falls back to
// ReleaseEligible while a policy change is pending or the job is finished.
uint32_t ReleaseAfterClock(JobState& job, uint32_t worker, uint32_t prev_done, Timestamp now,
                           Output* out);

// Sends RELEASE for `worker`'s last completed clock again (a retransmitted
// CLOCK of a released rank), with the epoch it was judged by, from `src`
// (the address the CLOCK reached).
void EmitRelease(JobState& job, uint32_t worker, const proto::Endpoint& src, Output* out);

}  // namespace serene::dataplane
