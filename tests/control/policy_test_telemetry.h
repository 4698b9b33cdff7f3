// Synthetic job telemetry for the policy tests: what the switch would report
// for a job of N ranks, built by hand so a test states exactly the situation
// a policy sees (a straggler, ranks waiting, a pending swap).
#pragma once

#include <algorithm>
#include <cstdint>

#include "control/runtime.pb.h"
#include "control/telemetry_convert.h"
#include "dataplane/barrier_params.h"

namespace serene::control::testing {

inline uint64_t Ns(double seconds) { return static_cast<uint64_t>(seconds * 1e9 + 0.5); }

// A job of `ranks` live ranks that all completed clock `done`, each with a
// step (work) time of `step` seconds, nobody waiting, under `rule`.
inline v1::JobTelemetry MakeTelemetry(
    int ranks, int64_t done = 10, double step = 0.1,
    dataplane::BarrierParams rule = dataplane::BarrierParams::Sync()) {
  v1::JobTelemetry t;
  v1::Job* job = t.mutable_job();
  job->set_id(1);
  job->set_workers(static_cast<uint32_t>(ranks));
  job->set_elements(1000);
  job->set_row_width(256);
  job->set_scale_log2(24);
  job->set_evict_after_ms(10000);
  t.set_now_ns(Ns(100));
  t.set_unix_ms(1'700'000'000'000);
  t.set_rows(4);
  *t.mutable_policy()->mutable_active() = RuleToProto(rule);
  t.mutable_policy()->set_active_epoch(1);
  t.mutable_policy()->set_max_released(done - 1);
  for (int i = 0; i < ranks; ++i) {
    v1::RankTelemetry* r = t.add_ranks();
    r->set_rank(static_cast<uint32_t>(i));
    r->set_done(done);
    r->set_joined(true);
    r->set_live(true);
    r->set_silent_ns(Ns(step / 2));
    r->set_iter_ns(Ns(step));
    r->set_work_ns(Ns(step));
    r->set_last_work_ns(Ns(step));
    r->set_address("127.0.0.1:" + std::to_string(5000 + i));
  }
  return t;
}

// Recomputes what the switch derives from the ranks' done clocks: low, high,
// each rank's lag and the live count.
inline void Derive(v1::JobTelemetry* t) {
  int64_t low = -1, high = -1;
  uint32_t live = 0;
  for (const v1::RankTelemetry& r : t->ranks()) {
    high = std::max(high, r.done());
    if (!r.live()) continue;
    ++live;
    low = low < 0 ? r.done() : std::min(low, r.done());
  }
  for (v1::RankTelemetry& r : *t->mutable_ranks()) r.set_lag(high - r.done());
  t->set_low(low);
  t->set_high(high);
  t->set_live_workers(live);
}

}  // namespace serene::control::testing
