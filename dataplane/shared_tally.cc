#include "dataplane/shared_tally.h"

#include "dataplane/job_state.h"

namespace serene::dataplane {

void SharedTally::AddTo(JobState& job) {
  AddApplied(job);
  for (size_t op = 0; op < rx_by_op_.size(); ++op) {
    if (rx_by_op_[op] != 0) job.counters.rx_by_op[op] += rx_by_op_[op];
    rx_by_op_[op] = 0;
  }
  if (completed_rows_ != 0) job.counters.completed_rows += completed_rows_;
  completed_rows_ = 0;
  if (folds_ != 0) job.counters.folds += folds_;
  folds_ = 0;
}

void SharedTally::AddApplied(JobState& job) {
  if (applied_ == 0) return;
  WorkerRegs& w = job.workers[worker_];
  w.rows_this_clock += applied_;
  w.counters.incs_applied += applied_;
  applied_ = 0;
}

}  // namespace serene::dataplane
