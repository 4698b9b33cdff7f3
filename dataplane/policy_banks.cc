#include "dataplane/policy_banks.h"

#include <string>

#include "proto/packet.h"

namespace serene::dataplane {
namespace {

bool AtOrAfter(uint32_t clock, uint32_t swap_clock) {
  return clock != proto::kNoClock && proto::ClockDiff(clock, swap_clock) >= 0;
}

// A clock >= the swap clock that some rank completed (so the new bank judged
// it), or kNoClock. Every rank counts, live or not (an evicted rank may have
// been released by the new bank), and so does the highest clock ever released
// (a rank that joined again no longer shows its old clock).
uint32_t FirstJudgedByNewBank(const JobState& job) {
  if (AtOrAfter(job.max_released, job.swap_clock)) return job.max_released;
  for (const WorkerRegs& w : job.workers) {
    if (AtOrAfter(w.done, job.swap_clock)) return w.done;
  }
  return proto::kNoClock;
}

}  // namespace

Status CheckSwapHorizon(uint16_t job, uint32_t x, uint32_t earliest) {
  if (proto::ClockDiff(x, earliest) <= static_cast<int64_t>(kSwapHorizon)) return Status::Ok();
  return Status::InvalidArgument(
      "job " + std::to_string(job) + ": effective clock " + std::to_string(x) +
      " is beyond the horizon: a change may take effect at most " + std::to_string(kSwapHorizon) +
      " clocks after the next clock to be released (" + std::to_string(earliest) + "), so use " +
      std::to_string(earliest) + ".." + std::to_string(earliest + kSwapHorizon) +
      " (or omit it for as soon as possible)");
}

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
  if (Status s = CheckSwapHorizon(job.config.id, x, earliest); !s.ok()) return s;
  PolicyBank& idle = job.banks[job.active ^ 1];
  idle.params = params;
  idle.epoch = job.next_epoch++;
  job.swap_pending = true;
  job.swap_clock = x;
  return PolicyChange{idle.epoch, x};
}

Result<PolicyChange> CancelPolicy(JobState& job, std::optional<uint32_t> epoch) {
  const std::string jid = "job " + std::to_string(job.config.id);
  if (!job.swap_pending) {
    return Status::FailedPrecondition(jid + ": no policy change is pending (the rule in force, " +
                                      job.banks[job.active].params.ToString() + ", epoch " +
                                      std::to_string(job.banks[job.active].epoch) +
                                      ", stays; install another one to change it)");
  }
  const PolicyBank& next = job.banks[job.active ^ 1];
  const std::string what = "the pending change (epoch " + std::to_string(next.epoch) + ", " +
                           next.params.ToString() + " from clock " +
                           std::to_string(job.swap_clock) + ")";
  if (epoch.has_value() && *epoch != next.epoch) {
    return Status::InvalidArgument(jid + ": epoch " + std::to_string(*epoch) + " is not pending; " +
                                   what + " is");
  }
  const uint32_t judged = FirstJudgedByNewBank(job);
  if (judged != proto::kNoClock) {
    return Status::FailedPrecondition(
        jid + ": " + what + " has begun to take effect: a rank has completed clock " +
        std::to_string(judged) + ", judged by the new rule; it can no longer be cancelled, " +
        "it retires when every live rank has completed clock " + std::to_string(job.swap_clock) +
        " (then install the rule you want)");
  }
  job.swap_pending = false;
  return PolicyChange{next.epoch, job.swap_clock};
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
