#include "dataplane/barrier.h"

#include <algorithm>
#include <functional>

#include "dataplane/policy_banks.h"
#include "dataplane/reply.h"

namespace serene::dataplane {
namespace {

using BarrierIndex = JobState::BarrierIndex;

// The k of a bank's quorum among `live` ranks: at least 1, at most live.
uint32_t QuorumOf(const BarrierParams& p, uint32_t live) {
  return std::max<uint32_t>(1, std::min(p.quorum, live));
}

// Clock offsets of live ranks above low_all, sorted descending, so that
// low_k = low_all + offsets[k-1]. Computed once per full evaluation.
struct Order {
  uint32_t count = 0;

  uint32_t LowK(const JobState& job, uint32_t k) const {
    if (count == 0) return job.low_all;
    const uint32_t idx = std::min(k, count) - 1;
    return job.low_all + static_cast<uint32_t>(job.scratch[idx]);
  }
};

Order SortLive(JobState& job) {
  Order o;
  for (const WorkerRegs& w : job.workers) {
    if (w.live) job.scratch[o.count++] = proto::ClockDiff(w.done, job.low_all);
  }
  std::sort(job.scratch.begin(), job.scratch.begin() + o.count, std::greater<int64_t>());
  return o;
}

// Whether a rank that completed `done` may start done+1 under the bank `p`
// that judges `done`, given low_k for that bank's quorum. Monotone: a lower
// `done`, a higher low_all or a higher low_k never makes it less eligible.
bool Eligible(const JobState& job, uint32_t done, const BarrierParams& p, uint32_t low_k) {
  if (job.finished) return true;
  // Clock 0 seeds the model: nobody starts clock 1 before every live rank has it.
  if (done == 0 && proto::ClockDiff(job.low_all, 0) < 0) return false;
  if (p.window != BarrierParams::kUnbounded &&
      proto::ClockDiff(done, low_k) > int64_t{p.window}) {
    return false;
  }
  if (p.lag != BarrierParams::kUnbounded &&
      proto::ClockDiff(done, job.low_all) > int64_t{p.lag}) {
    return false;
  }
  return true;
}

void SendRelease(JobState& job, uint32_t worker, const proto::Endpoint& src, Output* out) {
  const WorkerRegs& w = job.workers[worker];
  const int32_t values[proto::release::kCount] = {
      static_cast<int32_t>(w.release_epoch), static_cast<int32_t>(job.low_all),
      static_cast<int32_t>(job.high)};
  EmitReply(job, w.addr, src, proto::Op::kRelease, worker, w.done, 0, 0, values, out);
}

// Releases waiting rank `i` from its `done`.
void Release(JobState& job, uint32_t i, Timestamp now, Output* out) {
  WorkerRegs& w = job.workers[i];
  job.waiting.reset(i);
  w.released = true;
  w.release_epoch = BankFor(job, w.done).epoch;
  w.counters.wait_ns.AddExclusive(Elapsed(w.wait_since, now));
  w.released_at = now;
  w.counters.releases.AddExclusive(1);
  job.counters.releases.AddExclusive(1);
  if (proto::ClockDiff(w.done, job.max_released) > 0) job.max_released = w.done;
  SendRelease(job, i, w.local, out);  // from the address the rank's JOIN reached
}

// Recomputes the index from the ranks (O(N)), after the summary is fresh.
// Invalid while a change is pending (two banks, two quorums) or the job is
// finished (everyone is released anyway) or nobody is live.
void RebuildIndex(JobState& job) {
  BarrierIndex& x = job.index;
  x.valid = !job.finished && !job.swap_pending && job.live_count > 0;
  if (!x.valid) return;
  const uint32_t k = QuorumOf(job.banks[job.active].params, job.live_count);
  uint32_t n = 0;
  for (const WorkerRegs& w : job.workers) {
    if (w.live) job.scratch[n++] = proto::ClockDiff(w.done, job.low_all);
  }
  std::nth_element(job.scratch.begin(), job.scratch.begin() + (k - 1), job.scratch.begin() + n,
                   std::greater<int64_t>());
  x.low_k = job.low_all + static_cast<uint32_t>(job.scratch[k - 1]);
  x.n_low = x.n_ge_k = x.n_at_k = 0;
  for (const WorkerRegs& w : job.workers) {
    if (!w.live) continue;
    if (w.done == job.low_all) ++x.n_low;
    if (proto::ClockDiff(w.done, x.low_k) >= 0) ++x.n_ge_k;
    if (w.done == x.low_k) ++x.n_at_k;
  }
}

}  // namespace

void RefreshSummary(JobState& job) {
  uint32_t live = 0;
  uint32_t low = 0, high = 0, high_all = 0;
  bool any = false;
  for (const WorkerRegs& w : job.workers) {
    if (!any || proto::ClockDiff(w.done, high_all) > 0) high_all = w.done;
    any = true;
    if (!w.live) continue;
    if (live == 0 || proto::ClockDiff(w.done, low) < 0) low = w.done;
    if (live == 0 || proto::ClockDiff(w.done, high) > 0) high = w.done;
    ++live;
  }
  job.live_count = live;
  job.low_all = live > 0 ? low : high_all;
  job.high = live > 0 ? high : high_all;
}

namespace {

// EWMA with gain 1/8 (shifts only); the first sample seeds it.
void Ewma(uint64_t* avg, uint64_t sample) {
  if (*avg == 0) {
    *avg = sample;
  } else {
    *avg = static_cast<uint64_t>(static_cast<int64_t>(*avg) +
                                 (static_cast<int64_t>(sample) - static_cast<int64_t>(*avg)) / 8);
  }
}

}  // namespace

void CompleteClock(JobState& job, uint32_t worker, uint32_t clock, Timestamp now) {
  WorkerRegs& w = job.workers[worker];
  if (w.completed_at != 0) Ewma(&w.iter_ns, Elapsed(w.completed_at, now));
  if (w.released_at != 0) {
    w.last_work_ns = Elapsed(w.released_at, now);
    Ewma(&w.work_ns, w.last_work_ns);
  }
  w.completed_at = now;
  w.done = clock;
  w.released = false;
  w.wait_since = now;
  w.rows_this_clock = 0;
  w.counters.clocks.AddExclusive(1);
  job.waiting.set(worker);
}

uint32_t ReleaseEligible(JobState& job, Timestamp now, Output* out) {
  RefreshSummary(job);
  MaybeRetireBank(job);
  uint32_t released = 0;
  if (job.waiting.any()) {
    const Order order = SortLive(job);
    for (uint32_t i = 0; i < job.workers.size(); ++i) {
      if (!job.waiting.test(i)) continue;
      const BarrierParams& p = BankFor(job, job.workers[i].done).params;
      if (!Eligible(job, job.workers[i].done, p, order.LowK(job, p.quorum))) continue;
      Release(job, i, now, out);
      ++released;
    }
  }
  RebuildIndex(job);
  return released;
}

uint32_t ReleaseAfterClock(JobState& job, uint32_t worker, uint32_t prev_done, Timestamp now,
                           Output* out) {
  BarrierIndex& x = job.index;
  if (!x.valid) return ReleaseEligible(job, now, out);
  // The rank is live (CheckSender refuses others) and moved up from
  // prev_done (>= low_all, as every live rank) to done.
  const uint32_t done = job.workers[worker].done;
  if (proto::ClockDiff(done, job.high) > 0) job.high = done;
  bool moved = false;  // low_all or low_k changed: the others' eligibility may have
  if (prev_done == job.low_all && --x.n_low == 0) moved = true;
  if (proto::ClockDiff(prev_done, x.low_k) < 0 && proto::ClockDiff(done, x.low_k) >= 0) ++x.n_ge_k;
  if (prev_done == x.low_k) --x.n_at_k;
  if (done == x.low_k) ++x.n_at_k;
  const BarrierParams& p = job.banks[job.active].params;
  // k ranks strictly above low_k: the k-th highest clock moved up.
  if (x.n_ge_k - x.n_at_k >= QuorumOf(p, job.live_count)) moved = true;
  if (!moved) {
    // Everything the other waiting ranks depend on is as before, when none
    // of them was eligible: only this rank may go on.
    if (!Eligible(job, done, p, x.low_k)) return 0;
    Release(job, worker, now, out);
    return 1;
  }
  RefreshSummary(job);
  RebuildIndex(job);
  uint32_t released = 0;
  for (uint32_t i = 0; i < job.workers.size(); ++i) {
    if (!job.waiting.test(i) || !Eligible(job, job.workers[i].done, p, x.low_k)) continue;
    Release(job, i, now, out);
    ++released;
  }
  return released;
}

void EmitRelease(JobState& job, uint32_t worker, const proto::Endpoint& src, Output* out) {
  SendRelease(job, worker, src, out);
}

}  // namespace serene::dataplane
