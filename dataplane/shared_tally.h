// SharedTally: the counts INCs and READs add to a job's registers, gathered
// by one thread while it holds the job's lock shared, and added at once.
//
// Each such count is a Relaxed register (an atomic add) because several
// switch threads may hold the lock shared at the same time. A locked add
// right after a row's addition waits for the row's stores to drain, which
// cost as much as the addition of a row of 362 values (perf, 25.6M values
// in rows of 362). A burst of INCs (pipeline.h: Pipeline::Burst) instead
// counts here, in plain integers, and adds one atomic per register when its
// hold on the job ends. A CLOCK and a JOIN take the lock exclusive, after
// every holder added its tally, so they read the registers exact; telemetry
// reads them under the shared lock as they stand (Pipeline::Telemetry).
#pragma once

#include <array>
#include <cstdint>

#include "proto/packet.h"

namespace serene::dataplane {

struct JobState;

class SharedTally {
 public:
  // An authenticated INC or READ, or a JOIN answered with a COOKIE under the
  // shared lock (the job's rx_by_op).
  void CountRx(proto::Op op) { ++rx_by_op_[static_cast<size_t>(op)]; }
  // An INC of rank `worker` applied (the rank's rows_this_clock and
  // incs_applied). Consecutive INCs of one rank share the tally; another
  // rank's adds the previous rank's to `job` first.
  void CountApplied(JobState& job, uint32_t worker) {
    if (worker != worker_) {
      AddApplied(job);
      worker_ = worker;
    }
    ++applied_;
  }
  // A row sent to the reply group by the INC that completed it, and its fold.
  void CountCompletedRow() { ++completed_rows_; }
  void CountFold() { ++folds_; }

  // Adds everything counted to `job`'s registers and starts over.
  // REQUIRES: the lock on `job` under which the counts were made.
  void AddTo(JobState& job);

 private:
  void AddApplied(JobState& job);

  std::array<uint64_t, proto::kMaxOp + 1> rx_by_op_{};
  uint64_t completed_rows_ = 0;
  uint64_t folds_ = 0;
  uint32_t worker_ = 0;
  uint32_t applied_ = 0;
};

}  // namespace serene::dataplane
