#include "dataplane/barrier.h"

#include <algorithm>
#include <functional>

#include "dataplane/policy_banks.h"
#include "dataplane/reply.h"

namespace serene::dataplane {
namespace {

// Clock offsets of live ranks above low_all, sorted descending, so that
// low_k = low_all + offsets[k-1]. Computed once per evaluation.
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

bool Eligible(const JobState& job, const Order& order, uint32_t done) {
  if (job.finished) return true;
  // Clock 0 seeds the model: nobody starts clock 1 before every live rank has it.
  if (done == 0 && proto::ClockDiff(job.low_all, 0) < 0) return false;
  const BarrierParams& p = BankFor(job, done).params;
  if (p.window != BarrierParams::kUnbounded &&
      proto::ClockDiff(done, order.LowK(job, p.quorum)) > int64_t{p.window}) {
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
  ++w.counters.clocks;
  job.waiting.set(worker);
}

uint32_t ReleaseEligible(JobState& job, Timestamp now, Output* out) {
  RefreshSummary(job);
  MaybeRetireBank(job);
  if (job.waiting.none()) return 0;
  const Order order = SortLive(job);
  uint32_t released = 0;
  for (uint32_t i = 0; i < job.workers.size(); ++i) {
    if (!job.waiting.test(i)) continue;
    WorkerRegs& w = job.workers[i];
    if (!Eligible(job, order, w.done)) continue;
    job.waiting.reset(i);
    w.released = true;
    w.release_epoch = BankFor(job, w.done).epoch;
    w.counters.wait_ns += Elapsed(w.wait_since, now);
    w.released_at = now;
    ++w.counters.releases;
    ++job.counters.releases;
    if (proto::ClockDiff(w.done, job.max_released) > 0) job.max_released = w.done;
    SendRelease(job, i, w.local, out);  // from the address the rank's JOIN reached
    ++released;
  }
  return released;
}

void EmitRelease(JobState& job, uint32_t worker, const proto::Endpoint& src, Output* out) {
  SendRelease(job, worker, src, out);
}

}  // namespace serene::dataplane
