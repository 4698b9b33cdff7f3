#include "dataplane/policy_banks.h"

#include <string>

#include "proto/packet.h"

namespace serene::dataplane {

const PolicyBank& BankFor(const JobState& job, uint32_t clock) {
  if (job.swap_pending && proto::ClockDiff(clock, job.swap_clock) >= 0) {
    return job.banks[job.active ^ 1];
  }
  return job.banks[job.active];
}

Result<PolicyChange> InstallPolicy(JobState& job, const BarrierParams& params,
                                   std::optional<uint32_t> effective_clock) {
  const std::string jid = "job " + std::to_string(job.config.id);
  if (params.quorum == 0) return Status::InvalidArgument(jid + ": quorum must be at least 1");
  if (job.swap_pending) {
    const PolicyBank& next = job.banks[job.active ^ 1];
    return Status::FailedPrecondition(
        jid + ": the previous policy change (epoch " + std::to_string(next.epoch) + ", " +
        next.params.ToString() + " from clock " + std::to_string(job.swap_clock) +
        ") has not retired yet: " +
        (job.low_all == proto::kNoClock
             ? std::string("no live rank has completed a clock yet")
             : "the slowest live rank has completed clock " + std::to_string(job.low_all)) +
        "; retry when every live rank has completed clock " + std::to_string(job.swap_clock));
  }
  const uint32_t earliest = job.max_released + 1;  // kNoClock + 1 == 0
  uint32_t x = effective_clock.value_or(earliest);
  if (proto::ClockDiff(x, earliest) < 0) {
    return Status::FailedPrecondition(
        jid + ": effective clock " + std::to_string(x) + " is too early: clock " +
        std::to_string(job.max_released) + " was already released; use " +
        std::to_string(earliest) + " or later (or omit it for as soon as possible)");
  }
  PolicyBank& idle = job.banks[job.active ^ 1];
  idle.params = params;
  idle.epoch = job.next_epoch++;
  job.swap_pending = true;
  job.swap_clock = x;
  return PolicyChange{idle.epoch, x};
}

bool MaybeRetireBank(JobState& job) {
  if (!job.swap_pending) return false;
  // With no live rank there is nobody to have passed the swap clock: an
  // evicted rank that joins again may still be judged for an earlier clock,
  // by the old bank.
  if (job.live_count == 0 || proto::ClockDiff(job.low_all, job.swap_clock) < 0) return false;
  job.active ^= 1;
  job.swap_pending = false;
  job.counters.swaps.AddExclusive(1);
  return true;
}

}  // namespace serene::dataplane
