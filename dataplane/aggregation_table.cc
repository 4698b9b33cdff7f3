#include "dataplane/aggregation_table.h"

#include "dataplane/policy_banks.h"
#include "dataplane/row_ops.h"
#include "proto/codec.h"
#include "proto/values.h"

namespace serene::dataplane {
namespace {

void NoteClamps(JobState& job, uint32_t clamps) {
  if (clamps == 0) return;
  job.counters.saturations += clamps;
  job.saturated = true;
}

}  // namespace

void MaybeFoldRow(JobState& job, uint32_t row) {
  const uint32_t pc = job.pending_clock[row];
  if (pc == proto::kNoClock) return;
  if (job.live_count > 0 && proto::ClockDiff(job.low_all, pc) < 0) return;
  if (!job.pending_folded[row]) {
    const uint32_t clamps =
        AddRowSaturating(job.VisibleRow(row), job.PendingRow(row), job.config.RowLength(row));
    ++job.counters.folds;
    NoteClamps(job, clamps);
  }
  // pending is left as it is: the next exact INC stores into it.
  job.pending_clock[row] = proto::kNoClock;
  job.pending_folded[row] = 0;
  job.pending_incs[row] = 0;
}

uint32_t ReadAndFoldCompletedRow(JobState& job, uint32_t row, uint8_t* out_be) {
  int32_t* vis = job.VisibleRow(row);
  const int32_t* pending = job.PendingRow(row);
  const uint32_t n = job.config.RowLength(row);
  const uint32_t clamps = FoldRowStoreBigEndian(out_be, vis, pending, n);
  if (clamps > 0) {
    SubtractRow(vis, pending, n);  // visible wrapped: back to what it was
    NoteClamps(job, clamps);
    return clamps;
  }
  job.pending_folded[row] = 1;
  return 0;
}

bool ExactAt(const JobState& job, uint32_t clock) {
  // Clock 0 is the seeding clock: rank 0 writes the initial model straight
  // into the visible table.
  if (clock == 0) return false;
  return BankFor(job, clock - 1).params.Exact(job.config.workers);
}

bool NoRankReleasedFrom(const JobState& job, uint32_t clock) {
  return job.max_released == proto::kNoClock || proto::ClockDiff(job.max_released, clock) < 0;
}

bool ExactRead(const JobState& job, uint32_t clock) {
  return ExactAt(job, clock) && NoRankReleasedFrom(job, clock);
}

IncOutcome ApplyInc(JobState& job, uint32_t worker, uint32_t clock, uint32_t row,
                    const uint8_t* be_values) {
  uint32_t& tag = job.TagsOf(worker)[row];
  if (tag == clock) return IncOutcome::kDuplicate;
  tag = clock;

  MaybeFoldRow(job, row);
  int32_t* dst = job.VisibleRow(row);
  bool complete = false;
  if (ExactAt(job, clock)) {
    uint32_t& pc = job.pending_clock[row];
    // In steady exact mode the pending row is empty or holds this clock; a
    // different, unfolded clock only occurs across a policy transition, where
    // the window in force is not 0 and the live table is the right target.
    if (pc == proto::kNoClock) {
      // The clock's first INC: pending holds nothing of use (MaybeFoldRow).
      pc = clock;
      proto::LoadValues(be_values,
                        std::span<int32_t>(job.PendingRow(row), job.config.RowLength(row)));
      job.pending_incs[row] = 1;
      return job.config.workers == 1 ? IncOutcome::kRowComplete : IncOutcome::kApplied;
    }
    if (pc == clock && !job.pending_folded[row]) {
      dst = job.PendingRow(row);
      // The tag makes each rank count once per clock, so N counts mean every
      // rank's INC of this clock is in (and a folded row has all N already).
      complete = ++job.pending_incs[row] == job.config.workers;
    }
  }
  NoteClamps(job, AddRowFromBigEndian(dst, be_values, job.config.RowLength(row)));
  return complete ? IncOutcome::kRowComplete : IncOutcome::kApplied;
}

uint32_t ReadRow(JobState& job, uint32_t row, bool exact, uint32_t clock, uint8_t* out_be) {
  const int32_t* vis = job.VisibleRow(row);
  const uint32_t n = job.config.RowLength(row);
  if (job.pending_folded[row]) {
    // visible already holds pending: the live table, or (an exact READ of the
    // clock that completed the row) the model before it, exactly.
    if (exact && job.pending_clock[row] == clock) {
      StoreRowDifferenceBigEndian(out_be, vis, job.PendingRow(row), n);
    } else {
      proto::StoreValues(std::span<const int32_t>(vis, n), out_be);
    }
    return 0;
  }
  if (exact || job.pending_clock[row] == proto::kNoClock) {
    proto::StoreValues(std::span<const int32_t>(vis, n), out_be);
    return 0;
  }
  const uint32_t clamps = StoreRowSumBigEndian(out_be, vis, job.PendingRow(row), n);
  NoteClamps(job, clamps);
  return clamps;
}

}  // namespace serene::dataplane
