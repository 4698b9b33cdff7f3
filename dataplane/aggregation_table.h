// Aggregation table stage: the model in fixed point, exactly-once INC and
// READ (DESIGN.md §4).
//
// Each row has two register arrays and a tag: `visible` (what readers see),
// `pending` (INCs of one clock, pending_clock[r], held back while the window
// in force is 0) and the per-(worker,row) exactly-once tag. A pending row is
// folded into visible lazily, on the row's first access after every live
// rank completed its clock: bounded work (one row) per packet.
//
//   INC of clock t, exact mode (the bank that released clock t-1 has window 0):
//     pending[r] += v  (tagged t; the first INC of t stores v)
//                                   -> READs at clock t don't see it
//   INC otherwise (SSP/ASYNC/QUORUM, or a transition):  visible[r] += v (live)
//   READ at clock t, exact mode: visible[r]   (= the model after clock t-1)
//   READ otherwise:              visible[r] + pending[r] (the live table)
//
// pending_incs[r] counts the ranks whose INC of pending_clock[r] pending
// holds. When it reaches N the row is complete: visible + pending is the
// model after clock t, which the INC that completed it sends to the job's
// reply group (requests.cc; docs/protocol.md, "completed row") — as a P4
// register action adds the INC and reads the sum out into the packet. That
// INC also folds the row at once, in the same pass over both rows
// (ReadAndFoldCompletedRow: visible += pending, pending_folded[r] = 1) unless
// the sum clamped; pending is kept, so an exact READ at clock t still gets
// visible - pending (the model after t-1, exactly: nothing clamped), a live
// READ gets visible, and the later lazy fold only clears the row. pending is garbage while
// pending_clock[r] is kNoClock: nothing reads it then, and the next clock's
// first INC overwrites it instead of adding to a zeroed row.
//
// Additions saturate at the int32 range; each clamp is counted and marks the
// job saturated, which every reply then reports.
//
// REQUIRES: the caller holds job.mu exclusive, or shared and the row's
// stripe (job.row_locks): every function here touches one row's registers
// and otherwise writes only Relaxed counters and flags.
#pragma once

#include <cstdint>

#include "dataplane/job_state.h"

namespace serene::dataplane {

// Folds row r's pending accumulator into visible if its clock was completed by
// every live rank (a row ReadAndFoldCompletedRow folded is only cleared).
void MaybeFoldRow(JobState& job, uint32_t row);

// For a row ApplyInc just completed (kRowComplete): writes its live table,
// visible + pending (the model after the completed clock), into `out_be`
// (big-endian, RowLength(row) values) as ReadRow does, and folds it in the
// same pass: visible += pending, pending kept for exact READs of its clock.
// Returns how many sums were clamped, counted as ReadRow counts them; a row
// with any is left unfolded (visible as it was) for MaybeFoldRow, which
// counts them again. The fold itself is not counted: the caller adds it to
// `folds` (with its burst's tally).
uint32_t ReadAndFoldCompletedRow(JobState& job, uint32_t row, uint8_t* out_be);

// True if INCs of, and READs at, clock t are served in exact mode.
bool ExactAt(const JobState& job, uint32_t clock);

// True if a READ at clock t can be served exactly: ExactAt(t), and
// NoRankReleasedFrom(t). The second condition matters across a
// swap from an exact to a non-exact rule effective at t: a rank released from
// t by the new rule INCs clock t+1 straight into the visible table, so a rank
// still in t would read (and be told EXACT of) a model holding its peers'
// next-clock updates. One register compare, like the rest of the stage.
bool ExactRead(const JobState& job, uint32_t clock);

enum class IncOutcome : uint8_t {
  kDuplicate,  // this (worker, clock, row) was already applied: nothing changed
  kApplied,
  kRowComplete,  // applied in exact mode, and every rank has now INC'd the row at this clock
};

// Adds the INC's big-endian values to row r for (worker, clock). The caller
// has validated rank, row, count and clock.
IncOutcome ApplyInc(JobState& job, uint32_t worker, uint32_t clock, uint32_t row,
                    const uint8_t* be_values);

// True if no rank has been released from `clock` yet: none can have INC'd
// `clock + 1` (a rank released by a non-exact rule INCs it straight into the
// visible table). So a row complete at `clock` (ApplyInc said kRowComplete)
// holds, in its live table, the model after `clock` and nothing later.
bool NoRankReleasedFrom(const JobState& job, uint32_t clock);

// Writes row r into `out_be` (big-endian, RowLength(r) values): the model
// after clock - 1 if `exact` (ExactRead at the reader's `clock`), else the
// live table (visible + pending). Returns how many of the live sums were
// clamped: the model the reader sees is then not exact, and they are counted
// and mark the job saturated like any clamp (the fold of the row counts them
// again). `clock` matters only when exact.
// REQUIRES: MaybeFoldRow(job, row) was called first (the caller folds before
// writing the reply's header, so a saturation the fold causes is flagged).
uint32_t ReadRow(JobState& job, uint32_t row, bool exact, uint32_t clock, uint8_t* out_be);

}  // namespace serene::dataplane
