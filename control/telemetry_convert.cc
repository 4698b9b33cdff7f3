#include "control/telemetry_convert.h"

#include <string>

#include "dataplane/counters.h"
#include "net/address.h"
#include "proto/packet.h"

namespace serene::control {
namespace {

using dataplane::BarrierParams;

Status Bad(std::string_view field, const std::string& value, const std::string& expected) {
  return Status::InvalidArgument(std::string(field) + " " + value + ": " + expected);
}

v1::RankCounters CountersToProto(const dataplane::WorkerCounters& c) {
  v1::RankCounters p;
  p.set_joins(c.joins);
  p.set_reads(c.reads);
  p.set_incs_applied(c.incs_applied);
  p.set_incs_duplicate(c.incs_duplicate);
  p.set_clocks(c.clocks);
  p.set_clock_retransmits(c.clock_retransmits);
  p.set_nacks(c.nacks);
  p.set_releases(c.releases);
  p.set_errors(c.errors);
  p.set_evictions(c.evictions);
  return p;
}

v1::JobCounters CountersToProto(const dataplane::JobCounters& c) {
  v1::JobCounters p;
  for (uint8_t op = 1; op <= proto::kMaxOp; ++op) {
    if (c.rx_by_op[op] == 0) continue;
    (*p.mutable_rx_by_op())[std::string(proto::OpName(static_cast<proto::Op>(op)))] =
        c.rx_by_op[op];
  }
  for (size_t r = 1; r < dataplane::kNumDropReasons; ++r) {
    if (c.drops[r] == 0) continue;
    (*p.mutable_drops())[std::string(
        dataplane::DropReasonName(static_cast<dataplane::DropReason>(r)))] = c.drops[r];
  }
  p.set_saturations(c.saturations);
  p.set_folds(c.folds);
  p.set_completed_rows(c.completed_rows);
  p.set_releases(c.releases);
  p.set_nacks(c.nacks);
  p.set_errors(c.errors);
  p.set_swaps(c.swaps);
  return p;
}

}  // namespace

int64_t ClockValue(uint32_t clock) {
  return clock == proto::kNoClock ? -1 : static_cast<int64_t>(clock);
}

v1::Rule RuleToProto(const BarrierParams& params) {
  v1::Rule r;
  r.set_window(params.window);
  r.set_quorum(params.quorum == BarrierParams::kAllWorkers ? 0 : params.quorum);
  r.set_lag(params.lag);
  r.set_text(params.ToString());
  return r;
}

Result<BarrierParams> RuleFromProto(const v1::Rule& rule, uint32_t workers,
                                    std::string_view field) {
  BarrierParams p;
  p.window = rule.window();
  p.lag = rule.lag();
  p.quorum = rule.quorum() == 0 ? BarrierParams::kAllWorkers : rule.quorum();
  if (rule.quorum() > workers) {
    return Bad(std::string(field) + ".quorum", std::to_string(rule.quorum()),
               "the job has " + std::to_string(workers) +
                   " ranks; use 1.." + std::to_string(workers) + " (0 = every live rank)");
  }
  return p;
}

v1::Job JobToProto(const dataplane::JobConfig& c) {
  v1::Job j;
  j.set_id(c.id);
  j.set_workers(c.workers);
  j.set_elements(c.elements);
  j.set_row_width(c.row_width);
  j.set_scale_log2(c.scale_log2);
  j.set_key(c.key);
  *j.mutable_policy() = RuleToProto(c.policy);
  j.set_evict_after_ms(c.evict_after_ms);
  for (size_t i = 0; i < c.allow.size; ++i) {
    j.add_allow(dataplane::FormatSourcePrefix(c.allow.prefixes[i]));
  }
  if (c.group.valid()) j.set_group(dataplane::FormatGroup(c.group));
  return j;
}

Result<dataplane::JobConfig> JobFromProto(const v1::Job& job) {
  dataplane::JobConfig c;
  if (job.id() < 1 || job.id() > 65535) {
    return Bad("job.id", std::to_string(job.id()), "expected 1..65535");
  }
  c.id = static_cast<uint16_t>(job.id());
  if (job.workers() < 1 || job.workers() > dataplane::kMaxWorkers) {
    return Bad("job.workers", std::to_string(job.workers()),
               "expected 1.." + std::to_string(dataplane::kMaxWorkers));
  }
  c.workers = job.workers();
  if (job.elements() < 1 || job.elements() > dataplane::kMaxElements) {
    return Bad("job.elements", std::to_string(job.elements()),
               "expected 1.." + std::to_string(dataplane::kMaxElements));
  }
  c.elements = job.elements();
  if (job.row_width() != 0) {
    if (job.row_width() > dataplane::kMaxRowWidth) {
      return Bad("job.row_width", std::to_string(job.row_width()),
                 "expected 1.." + std::to_string(dataplane::kMaxRowWidth) + " (0 = " +
                     std::to_string(dataplane::kDefaultRowWidth) + ")");
    }
    c.row_width = job.row_width();
  }
  if (job.scale_log2() != 0) {
    if (job.scale_log2() > 30) {
      return Bad("job.scale_log2", std::to_string(job.scale_log2()),
                 "expected 1..30 (0 = " + std::to_string(dataplane::kDefaultScaleLog2) + ")");
    }
    c.scale_log2 = job.scale_log2();
  }
  if (job.key() != 0) {
    return Bad("job.key", std::to_string(job.key()),
               "leave it 0: the switch draws a fresh random key and returns it");
  }
  if (job.has_policy()) {
    auto p = RuleFromProto(job.policy(), c.workers, "job.policy");
    if (!p.ok()) return p.status();
    c.policy = *p;
  }
  if (job.has_evict_after_ms()) {
    if (job.evict_after_ms() > dataplane::kMaxEvictAfterMs) {
      return Bad("job.evict_after_ms", std::to_string(job.evict_after_ms()),
                 "expected 0.." + std::to_string(dataplane::kMaxEvictAfterMs) + " (0 = never)");
    }
    c.evict_after_ms = job.evict_after_ms();
  }
  if (job.allow_size() > static_cast<int>(dataplane::kMaxAllowPrefixes)) {
    return Bad("job.allow", std::to_string(job.allow_size()) + " prefixes",
               "at most " + std::to_string(dataplane::kMaxAllowPrefixes) + " per job");
  }
  for (int i = 0; i < job.allow_size(); ++i) {
    const std::string field = "job.allow[" + std::to_string(i) + "]";
    auto prefix = dataplane::ParseSourcePrefix(job.allow(i));
    if (!prefix.ok()) return Status::InvalidArgument(field + ": " + prefix.status().message());
    Status added = c.allow.Add(*prefix);
    if (!added.ok()) return Status::InvalidArgument(field + ": " + added.message());
  }
  if (!job.group().empty()) {
    auto g = dataplane::ParseGroup(job.group());
    if (!g.ok()) return Status::InvalidArgument("job.group: " + g.status().message());
    c.group = *g;
  }
  Status s = c.Validate();
  if (!s.ok()) return Status::InvalidArgument(s.message());
  return c;
}

v1::PolicyState PolicyToProto(const dataplane::JobTelemetry& t) {
  v1::PolicyState p;
  p.set_job(t.config.id);
  *p.mutable_active() = RuleToProto(t.active);
  p.set_active_epoch(t.active_epoch);
  p.set_swap_pending(t.swap_pending);
  if (t.swap_pending) {
    *p.mutable_next() = RuleToProto(t.next);
    p.set_next_epoch(t.next_epoch);
    p.set_swap_clock(t.swap_clock);
  }
  p.set_max_released(ClockValue(t.max_released));
  return p;
}

v1::JobTelemetry TelemetryToProto(const dataplane::JobTelemetry& t, dataplane::Timestamp now,
                                  uint64_t unix_ms) {
  v1::JobTelemetry p;
  v1::Job* job = p.mutable_job();
  *job = JobToProto(t.config);
  job->clear_key();  // telemetry goes to dashboards and policies: no secrets
  *job->mutable_policy() = RuleToProto(t.active);
  p.set_now_ns(now);
  p.set_unix_ms(unix_ms);
  p.set_rows(t.rows);
  p.set_live_workers(t.live_workers);
  p.set_low(ClockValue(t.low));
  p.set_high(ClockValue(t.high));
  *p.mutable_policy() = PolicyToProto(t);
  p.set_saturated(t.saturated);
  p.set_finished(t.finished);
  *p.mutable_counters() = CountersToProto(t.counters);
  for (const dataplane::WorkerTelemetry& w : t.workers) {
    v1::RankTelemetry* r = p.add_ranks();
    r->set_rank(w.rank);
    r->set_done(ClockValue(w.done));
    const int64_t lag = ClockValue(t.high) - ClockValue(w.done);
    r->set_lag(lag > 0 ? lag : 0);
    r->set_joined(w.joined);
    r->set_live(w.live);
    r->set_waiting(w.waiting);
    const uint64_t wait_now = w.waiting ? dataplane::Elapsed(w.wait_since, now) : 0;
    r->set_wait_now_ns(wait_now);
    r->set_wait_total_ns(w.counters.wait_ns + wait_now);
    r->set_silent_ns(w.last_seen == 0 ? -1
                                      : static_cast<int64_t>(dataplane::Elapsed(w.last_seen, now)));
    r->set_iter_ns(w.iter_ns);
    r->set_work_ns(w.work_ns);
    r->set_last_work_ns(w.last_work_ns);
    r->set_rows_this_clock(w.rows_this_clock);
    if (w.joined) r->set_address(net::FormatEndpoint(w.addr));
    *r->mutable_counters() = CountersToProto(w.counters);
  }
  return p;
}

}  // namespace serene::control
