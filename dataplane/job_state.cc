#include "dataplane/job_state.h"

namespace serene::dataplane {

uint64_t JobStateBytes(const JobConfig& c) {
  const uint64_t rows = c.rows();
  return 2 * c.elements * sizeof(int32_t) + 2 * rows * sizeof(uint32_t) + rows +
         rows * c.workers * sizeof(uint32_t) + c.workers * sizeof(WorkerRegs) + sizeof(JobState);
}

JobState::JobState(const JobConfig& c, uint32_t incarnation_value, const CookieSecret& secret)
    : config(c),
      rows(c.rows()),
      incarnation(incarnation_value),
      cookie_secret(secret),
      visible(c.elements, 0),
      pending(c.elements, 0),
      pending_clock(rows, proto::kNoClock),
      pending_folded(rows, 0),
      pending_incs(rows, 0),
      inc_tag(size_t{rows} * c.workers, proto::kNoClock),
      workers(c.workers),
      live_count(c.workers) {
  banks[0] = PolicyBank{c.policy, 0};
  banks[1] = PolicyBank{c.policy, 0};
}

}  // namespace serene::dataplane
