#include "dataplane/membership.h"

#include "dataplane/barrier.h"
#include "dataplane/policy_banks.h"
#include "dataplane/reply.h"

namespace serene::dataplane {
namespace {

// The group's IPv4 address as a number (JOIN_ACK carries it so); 0: none.
uint32_t GroupAddress(const proto::Endpoint& group) {
  if (group.family != proto::Endpoint::Family::kIPv4) return 0;
  return uint32_t{group.addr[0]} << 24 | uint32_t{group.addr[1]} << 16 |
         uint32_t{group.addr[2]} << 8 | group.addr[3];
}

}  // namespace

DropReason CheckSender(const JobState& job, const proto::Header& h, const proto::Endpoint& src) {
  if (h.worker >= job.workers.size()) return DropReason::kBadRank;
  const WorkerRegs& w = job.workers[h.worker];
  if (!w.joined) return DropReason::kNotJoined;
  if (!(w.addr == src)) return DropReason::kWrongSource;
  if (!w.live) return DropReason::kEvicted;
  return DropReason::kNone;
}

DropReason CheckJoin(const JobState& job, uint32_t worker, const proto::Endpoint& src) {
  const WorkerRegs& w = job.workers[worker];
  if (w.joined && w.live && !(w.addr == src)) return DropReason::kRankInUse;
  return DropReason::kNone;
}

void Join(JobState& job, uint32_t worker, const proto::Endpoint& src, const proto::Endpoint& local,
          Timestamp now, Output* out) {
  WorkerRegs& w = job.workers[worker];
  w.addr = src;
  w.local = local;
  w.joined = true;
  w.counters.joins.AddExclusive(1);
  if (!w.live) {
    // Resume at low_all (the slowest live rank's clock; with no rank live,
    // the highest clock any rank completed), or the rank's own if it is
    // ahead: the barrier's low clock does not move back, and no clock is run
    // again by a rank joining after the others were released from it — maybe
    // by a bank retired since (fuzz/regressions/pipeline/epoch-split-late-join).
    if (proto::ClockDiff(job.low_all, w.done) > 0) {
      w.done = job.low_all;
      w.released = true;
      w.rows_this_clock = 0;
    }
    w.live = true;
    w.released_at = w.released ? now : 0;  // the silence is not a step of the rank's
    w.completed_at = 0;
    if (!w.released) {
      job.waiting.set(worker);
      w.wait_since = now;
    }
  }
  ReleaseEligible(job, now, out);

  const uint32_t epoch = BankFor(job, w.done).epoch;
  const int32_t values[proto::join_ack::kCountWithGroup] = {
      static_cast<int32_t>(job.config.workers),
      static_cast<int32_t>(static_cast<uint32_t>(job.config.elements)),
      static_cast<int32_t>(job.config.row_width),
      static_cast<int32_t>(w.done),
      static_cast<int32_t>(job.low_all),
      static_cast<int32_t>(job.high),
      static_cast<int32_t>(epoch),
      static_cast<int32_t>(job.rows),
      static_cast<int32_t>(job.config.scale_log2),
      static_cast<int32_t>(job.incarnation),
      static_cast<int32_t>(GroupAddress(job.config.group)),
      static_cast<int32_t>(job.config.group.port),
  };
  const uint16_t f = w.released ? 0 : proto::flags::kWaiting;
  // The group's two values only when there is one: a job without keeps the
  // JOIN_ACK every switch (the P4 one too) sends.
  const size_t n = job.config.group.valid() ? proto::join_ack::kCountWithGroup
                                            : proto::join_ack::kCount;
  EmitReply(job, src, local, proto::Op::kJoinAck, worker, w.done, 0, f,
            std::span<const int32_t>(values, n), out);
}

void RemoveFromBarrier(JobState& job, uint32_t worker, Timestamp now, Output* out) {
  WorkerRegs& w = job.workers[worker];
  if (w.live) w.counters.evictions.AddExclusive(1);
  w.live = false;
  job.waiting.reset(worker);
  ReleaseEligible(job, now, out);
}

}  // namespace serene::dataplane
