#include "switch/metrics_exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <type_traits>

#include "dataplane/barrier_params.h"
#include "proto/codec.h"
#include "proto/packet.h"

namespace serene::switchd {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::JobTelemetry;
using dataplane::WorkerTelemetry;

enum class Type { kCounter, kGauge };

struct Label {
  std::string_view name;
  std::string_view value;
};

// The decimal text of an integer, on the stack (label values, sample values).
class Decimal {
 public:
  template <typename T>
  explicit Decimal(T v) {
    static_assert(std::is_integral_v<T>);
    len_ = static_cast<size_t>(std::to_chars(buf_, buf_ + sizeof buf_, v).ptr - buf_);
  }
  std::string_view view() const { return {buf_, len_}; }

 private:
  char buf_[24];  // a 64-bit integer and its sign
  size_t len_ = 0;
};

void AppendDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
  } else {
    char buf[32];  // the shortest round-trip form of a double fits in 24
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, static_cast<size_t>(r.ptr - buf));
  }
}

template <typename T>
void AppendValue(T v, std::string* out) {
  if constexpr (std::is_same_v<T, bool>) {
    out->push_back(v ? '1' : '0');
  } else if constexpr (std::is_floating_point_v<T>) {
    AppendDouble(static_cast<double>(v), out);
  } else {
    out->append(Decimal(v).view());
  }
}

// Writes metric families: Family() starts one with its HELP and TYPE lines,
// Sample() adds a sample of the current family. The format wants all samples
// of a family together, so callers loop over jobs inside each family.
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}

  void Family(std::string_view name, Type type, std::string_view help) {
    name_ = name;
    out_->append("# HELP ").append(name).push_back(' ');
    for (char c : help) {  // HELP text escapes backslash and line feed
      if (c == '\\') {
        out_->append("\\\\");
      } else if (c == '\n') {
        out_->append("\\n");
      } else {
        out_->push_back(c);
      }
    }
    out_->append("\n# TYPE ").append(name);
    out_->append(type == Type::kCounter ? " counter\n" : " gauge\n");
  }

  template <typename T>
  void Sample(std::initializer_list<Label> labels, T value) {
    out_->append(name_);
    if (labels.size() > 0) {
      char sep = '{';
      for (const Label& l : labels) {
        out_->push_back(sep);
        out_->append(l.name).append("=\"");
        AppendEscapedLabelValue(l.value, out_);
        out_->push_back('"');
        sep = ',';
      }
      out_->push_back('}');
    }
    out_->push_back(' ');
    AppendValue(value, out_);
    out_->push_back('\n');
  }

  // A sample that may be absent (e.g. "seconds since last seen" of a rank
  // never seen): absent samples are left out rather than written as NaN.
  template <typename T>
  void Sample(std::initializer_list<Label> labels, std::optional<T> value) {
    if (value.has_value()) Sample(labels, *value);
  }

 private:
  std::string* out_;
  std::string_view name_;
};

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// A clock as a number; -1 for kNoClock ("none yet").
int64_t ClockValue(uint32_t c) { return c == proto::kNoClock ? -1 : int64_t{c}; }

// W, k or L of a policy; +Inf for "unbounded" / "every live worker".
double PolicyValue(uint32_t v) {
  return v == BarrierParams::kUnbounded ? std::numeric_limits<double>::infinity()
                                        : static_cast<double>(v);
}

// Drop reasons that are attributed to a job. Parse errors, reply ops and
// unknown job ids are found before the job is known: global counters.
bool CountedPerJob(DropReason r) {
  return r != DropReason::kNone && r != DropReason::kParse && r != DropReason::kNotRequest &&
         r != DropReason::kUnknownJob;
}

// One family with one sample per job: value(job).
template <typename Fn>
void PerJob(Writer& w, const std::vector<JobTelemetry>& jobs, std::string_view name, Type type,
            std::string_view help, Fn value) {
  w.Family(name, type, help);
  for (const JobTelemetry& t : jobs) {
    const Decimal job(t.config.id);
    w.Sample({{"job_id", job.view()}}, value(t));
  }
}

// One family with one sample per rank of every job: value(job, rank).
template <typename Fn>
void PerRank(Writer& w, const std::vector<JobTelemetry>& jobs, std::string_view name, Type type,
             std::string_view help, Fn value) {
  w.Family(name, type, help);
  for (const JobTelemetry& t : jobs) {
    const Decimal job(t.config.id);
    for (const WorkerTelemetry& r : t.workers) {
      const Decimal rank(r.rank);
      w.Sample({{"job_id", job.view()}, {"rank", rank.view()}}, value(t, r));
    }
  }
}

void Global(Writer& w, const MetricsSnapshot& s) {
  const dataplane::GlobalCounters& g = s.global;
  w.Family("serene_packets_total", Type::kCounter,
           "Datagrams the data plane processed (after receive fault injection).");
  w.Sample({}, g.packets);
  w.Family("serene_parse_errors_total", Type::kCounter,
           "Malformed datagrams dropped before job lookup, by the first check that failed.");
  for (size_t k = 0; k < g.parse_errors.size(); ++k) {
    const auto e = static_cast<proto::ParseError>(k);
    if (e == proto::ParseError::kOk) continue;
    w.Sample({{"kind", proto::ParseErrorName(e)}}, g.parse_errors[k]);
  }
  w.Family("serene_not_request_packets_total", Type::kCounter,
           "Well-formed datagrams carrying a reply op (switch-to-worker), dropped.");
  w.Sample({}, g.not_request);
  w.Family("serene_unknown_job_packets_total", Type::kCounter,
           "Requests for a job id the switch does not hold, dropped.");
  w.Sample({}, g.unknown_job);
  w.Family("serene_bad_key_packets_total", Type::kCounter,
           "Requests with the wrong key for their job, dropped (also in serene_job_drops_total).");
  w.Sample({}, g.bad_key);
  w.Family("serene_jobs", Type::kGauge, "Jobs the switch holds.");
  w.Sample({}, s.jobs.size());
}

void Ports(Writer& w, const ServerCounters& c) {
  struct Counter {
    std::string_view name;
    std::string_view help;
    uint64_t value;
  };
  const Counter counters[] = {
      {"serene_port_rx_datagrams_total", "Datagrams received on the UDP ports.", c.rx_datagrams},
      {"serene_port_rx_bytes_total", "Payload bytes received on the UDP ports.", c.rx_bytes},
      {"serene_port_rx_truncated_total",
       "Datagrams larger than a receive slot (64 KiB), dropped before the data plane.",
       c.rx_truncated},
      {"serene_port_rx_errors_total", "Failed recvmmsg/poll calls.", c.rx_errors},
      {"serene_port_tx_datagrams_total", "Datagrams sent on the UDP ports.", c.tx_datagrams},
      {"serene_port_tx_bytes_total", "Payload bytes sent on the UDP ports.", c.tx_bytes},
      {"serene_port_tx_errors_total", "Datagrams the kernel refused to send.", c.tx_errors},
      {"serene_control_tx_datagrams_total",
       "Datagrams sent for control operations (evict, policy swap, finish).", c.control_tx},
  };
  for (const Counter& k : counters) {
    w.Family(k.name, Type::kCounter, k.help);
    w.Sample({}, k.value);
  }

  // Fault injection (zero unless --fault is on), one family per outcome.
  struct Fault {
    std::string_view name;
    std::string_view help;
    uint64_t net::FaultCounters::*field;
  };
  const Fault faults[] = {
      {"serene_fault_offered_total", "Datagrams offered to the fault injector.",
       &net::FaultCounters::offered},
      {"serene_fault_delivered_total",
       "Datagrams the fault injector delivered (duplicates count twice).",
       &net::FaultCounters::delivered},
      {"serene_fault_dropped_total", "Datagrams the fault injector dropped.",
       &net::FaultCounters::dropped},
      {"serene_fault_duplicated_total", "Extra copies the fault injector made.",
       &net::FaultCounters::duplicated},
      {"serene_fault_reordered_total",
       "Datagrams the fault injector held and delivered after their successor.",
       &net::FaultCounters::reordered},
      {"serene_fault_held_expired_total",
       "Held datagrams delivered at the end of the hold, without a successor.",
       &net::FaultCounters::held_expired},
      {"serene_fault_delayed_total", "Datagrams the fault injector gave a non-zero delay.",
       &net::FaultCounters::delayed},
  };
  for (const Fault& f : faults) {
    w.Family(f.name, Type::kCounter, f.help);
    w.Sample({{"direction", "rx"}}, c.rx_faults.*f.field);
    w.Sample({{"direction", "tx"}}, c.tx_faults.*f.field);
  }
}

void Control(Writer& w, const ControlPlaneCounters& c) {
  w.Family("serene_control_rpcs_total", Type::kCounter, "Runtime API calls received.");
  w.Sample({}, c.rpcs);
  w.Family("serene_control_unauthenticated_total", Type::kCounter,
           "Runtime API calls refused for a missing or wrong token.");
  w.Sample({}, c.unauthenticated);
  w.Family("serene_control_invalid_argument_total", Type::kCounter,
           "Runtime API calls refused for an invalid argument.");
  w.Sample({}, c.invalid_argument);
  w.Family("serene_control_silence_evictions_total", Type::kCounter,
           "Ranks the daemon evicted because they were silent longer than evict_after.");
  w.Sample({}, c.silence_evictions);
}

void Jobs(Writer& w, const std::vector<JobTelemetry>& jobs) {
  const Type kGauge = Type::kGauge;
  const Type kCounter = Type::kCounter;

  // Geometry and membership.
  PerJob(w, jobs, "serene_job_workers", kGauge, "Ranks the job was created for (N).",
         [](const JobTelemetry& t) { return t.config.workers; });
  PerJob(w, jobs, "serene_job_elements", kGauge, "int32 values in the job's model.",
         [](const JobTelemetry& t) { return t.config.elements; });
  PerJob(w, jobs, "serene_job_rows", kGauge, "Rows (datagrams) of the job's model.",
         [](const JobTelemetry& t) { return t.rows; });
  PerJob(w, jobs, "serene_job_live_ranks", kGauge, "Ranks currently in the barrier.",
         [](const JobTelemetry& t) { return t.live_workers; });

  // Barrier.
  PerJob(w, jobs, "serene_job_low_clock", kGauge,
         "Slowest live rank's completed clock (-1: none yet).",
         [](const JobTelemetry& t) { return ClockValue(t.low); });
  PerJob(w, jobs, "serene_job_high_clock", kGauge, "Fastest rank's completed clock (-1: none yet).",
         [](const JobTelemetry& t) { return ClockValue(t.high); });
  PerJob(w, jobs, "serene_job_max_released_clock", kGauge,
         "Highest clock any rank was released from (-1: none yet).",
         [](const JobTelemetry& t) { return ClockValue(t.max_released); });

  // Policy.
  w.Family("serene_job_policy_info", kGauge,
           "Barrier policy of each bank: bank=\"active\", and bank=\"next\" while a swap is "
           "pending; always 1.");
  for (const JobTelemetry& t : jobs) {
    const Decimal job(t.config.id);
    const std::string active = t.active.ToString();
    const Decimal active_epoch(t.active_epoch);
    w.Sample({{"job_id", job.view()},
              {"bank", "active"},
              {"policy", active},
              {"epoch", active_epoch.view()}},
             1);
    if (t.swap_pending) {
      const std::string next = t.next.ToString();
      const Decimal next_epoch(t.next_epoch);
      w.Sample(
          {{"job_id", job.view()}, {"bank", "next"}, {"policy", next}, {"epoch", next_epoch.view()}},
          1);
    }
  }
  PerJob(w, jobs, "serene_job_policy_window", kGauge, "Active policy's window W (+Inf: unbounded).",
         [](const JobTelemetry& t) { return PolicyValue(t.active.window); });
  PerJob(w, jobs, "serene_job_policy_quorum", kGauge,
         "Active policy's quorum k (+Inf: every live rank).",
         [](const JobTelemetry& t) { return PolicyValue(t.active.quorum); });
  PerJob(w, jobs, "serene_job_policy_lag", kGauge, "Active policy's lag bound L (+Inf: unbounded).",
         [](const JobTelemetry& t) { return PolicyValue(t.active.lag); });
  PerJob(w, jobs, "serene_job_policy_epoch", kGauge, "Epoch of the active policy bank.",
         [](const JobTelemetry& t) { return t.active_epoch; });
  PerJob(w, jobs, "serene_job_swap_pending", kGauge,
         "1 while a new policy is installed and the old one not yet retired.",
         [](const JobTelemetry& t) { return t.swap_pending; });
  PerJob(w, jobs, "serene_job_swap_clock", kGauge,
         "First clock the pending policy judges (only while a swap is pending).",
         [](const JobTelemetry& t) {
           return t.swap_pending ? std::optional<int64_t>(ClockValue(t.swap_clock)) : std::nullopt;
         });
  PerJob(w, jobs, "serene_job_saturated", kGauge,
         "1 once an addition to the job's table was clamped to the int32 range.",
         [](const JobTelemetry& t) { return t.saturated; });
  PerJob(w, jobs, "serene_job_finished", kGauge, "1 once a rank finished the job.",
         [](const JobTelemetry& t) { return t.finished; });

  // Counters.
  w.Family("serene_job_requests_total", kCounter, "Authenticated requests of the job, by op.");
  for (const JobTelemetry& t : jobs) {
    const Decimal job(t.config.id);
    for (uint8_t op = proto::kMinOp; op <= proto::kMaxOp; ++op) {
      const auto o = static_cast<proto::Op>(op);
      if (!proto::IsRequest(o)) continue;
      w.Sample({{"job_id", job.view()}, {"op", proto::OpName(o)}}, t.counters.rx_by_op[op]);
    }
  }
  w.Family("serene_job_drops_total", kCounter,
           "Requests of the job refused (ERROR reply) or dropped, by reason.");
  for (const JobTelemetry& t : jobs) {
    const Decimal job(t.config.id);
    for (size_t r = 0; r < dataplane::kNumDropReasons; ++r) {
      const auto reason = static_cast<DropReason>(r);
      if (!CountedPerJob(reason)) continue;
      w.Sample({{"job_id", job.view()}, {"reason", dataplane::DropReasonName(reason)}},
               t.counters.drops[r]);
    }
  }
  PerJob(w, jobs, "serene_job_releases_total", kCounter, "RELEASEs sent to the job's ranks.",
         [](const JobTelemetry& t) { return t.counters.releases; });
  PerJob(w, jobs, "serene_job_nacks_total", kCounter, "NACKs sent to the job's ranks.",
         [](const JobTelemetry& t) { return t.counters.nacks; });
  PerJob(w, jobs, "serene_job_errors_total", kCounter, "ERROR replies sent to the job's ranks.",
         [](const JobTelemetry& t) { return t.counters.errors; });
  PerJob(w, jobs, "serene_job_swaps_total", kCounter, "Policy bank flips.",
         [](const JobTelemetry& t) { return t.counters.swaps; });
  PerJob(w, jobs, "serene_job_folds_total", kCounter,
         "Pending rows folded into the visible model (exact mode).",
         [](const JobTelemetry& t) { return t.counters.folds; });
  PerJob(w, jobs, "serene_job_completed_rows_total", kCounter,
         "Rows sent to the reply group by the INC that completed them (exact mode).",
         [](const JobTelemetry& t) { return t.counters.completed_rows; });
  PerJob(w, jobs, "serene_job_saturations_total", kCounter, "Additions clamped to the int32 range.",
         [](const JobTelemetry& t) { return t.counters.saturations; });
}

void Ranks(Writer& w, const std::vector<JobTelemetry>& jobs, dataplane::Timestamp now) {
  const Type kGauge = Type::kGauge;
  const Type kCounter = Type::kCounter;
  using R = const WorkerTelemetry&;
  using J = const JobTelemetry&;

  PerRank(w, jobs, "serene_rank_joined", kGauge, "1 once the rank has sent JOIN.",
          [](J, R r) { return r.joined; });
  PerRank(w, jobs, "serene_rank_live", kGauge,
          "1 while the rank is in the barrier (joined, not evicted, not left).",
          [](J, R r) { return r.live; });
  PerRank(w, jobs, "serene_rank_done_clock", kGauge, "Rank's last completed clock (-1: none yet).",
          [](J, R r) { return ClockValue(r.done); });
  PerRank(w, jobs, "serene_rank_lag_clocks", kGauge,
          "Clocks the rank is behind the job's fastest rank.",
          [](J t, R r) { return std::max<int64_t>(0, proto::ClockDiff(t.high, r.done)); });
  PerRank(w, jobs, "serene_rank_waiting", kGauge,
          "1 while the rank has completed a clock and waits for its RELEASE.",
          [](J, R r) { return r.waiting; });
  PerRank(
      w, jobs, "serene_rank_waiting_seconds", kGauge,
      "How long the rank has been waiting for its RELEASE (0 when not waiting).",
      [now](J, R r) { return r.waiting ? Seconds(dataplane::Elapsed(r.wait_since, now)) : 0.0; });
  PerRank(w, jobs, "serene_rank_wait_seconds_total", kCounter,
          "Total time the rank waited for RELEASEs, the current wait included.", [now](J, R r) {
            const uint64_t current = r.waiting ? dataplane::Elapsed(r.wait_since, now) : 0;
            return Seconds(r.counters.wait_ns + current);
          });
  PerRank(w, jobs, "serene_rank_last_seen_seconds", kGauge,
          "Seconds since the rank's last authenticated packet (absent: never seen).",
          [now](J, R r) {
            return r.last_seen == 0
                       ? std::nullopt
                       : std::optional<double>(Seconds(dataplane::Elapsed(r.last_seen, now)));
          });
  PerRank(w, jobs, "serene_rank_iteration_seconds", kGauge,
          "EWMA of the time between the rank's completed clocks (absent: no sample yet).",
          [](J, R r) {
            return r.iter_ns == 0 ? std::nullopt : std::optional<double>(Seconds(r.iter_ns));
          });
  PerRank(w, jobs, "serene_rank_work_seconds", kGauge,
          "EWMA of RELEASE to next CLOCK, the rank's own step time (absent: no sample yet).",
          [](J, R r) {
            return r.work_ns == 0 ? std::nullopt : std::optional<double>(Seconds(r.work_ns));
          });

  PerRank(w, jobs, "serene_rank_joins_total", kCounter, "JOINs of the rank.",
          [](J, R r) { return r.counters.joins; });
  PerRank(w, jobs, "serene_rank_reads_total", kCounter, "READs of the rank.",
          [](J, R r) { return r.counters.reads; });
  PerRank(w, jobs, "serene_rank_incs_applied_total", kCounter,
          "INC rows of the rank added to the table.",
          [](J, R r) { return r.counters.incs_applied; });
  PerRank(w, jobs, "serene_rank_incs_duplicate_total", kCounter,
          "INC rows of the rank already applied (retransmissions), ignored.",
          [](J, R r) { return r.counters.incs_duplicate; });
  PerRank(w, jobs, "serene_rank_clocks_total", kCounter,
          "CLOCKs of the rank that completed a clock.", [](J, R r) { return r.counters.clocks; });
  PerRank(w, jobs, "serene_rank_clock_retransmits_total", kCounter,
          "CLOCKs of the rank for the clock it already completed.",
          [](J, R r) { return r.counters.clock_retransmits; });
  PerRank(w, jobs, "serene_rank_releases_total", kCounter, "RELEASEs sent to the rank.",
          [](J, R r) { return r.counters.releases; });
  PerRank(w, jobs, "serene_rank_nacks_total", kCounter, "NACKs sent to the rank.",
          [](J, R r) { return r.counters.nacks; });
  PerRank(w, jobs, "serene_rank_errors_total", kCounter, "ERROR replies sent to the rank.",
          [](J, R r) { return r.counters.errors; });
  PerRank(w, jobs, "serene_rank_evictions_total", kCounter,
          "Times the rank was taken out of the barrier (evicted or LEAVE).",
          [](J, R r) { return r.counters.evictions; });
}

}  // namespace

void AppendEscapedLabelValue(std::string_view value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendEscapedLabelValue(value, &out);
  return out;
}

MetricsSnapshot SnapshotMetrics(const dataplane::Pipeline& pipeline, const ServerCounters& server,
                                const ControlPlaneCounters& control, dataplane::Timestamp now) {
  MetricsSnapshot s;
  const std::vector<uint16_t> ids = pipeline.JobIds();
  s.jobs.reserve(ids.size());
  for (uint16_t id : ids) {
    Result<JobTelemetry> t = pipeline.Telemetry(id);
    if (t.ok()) s.jobs.push_back(std::move(*t));  // else deleted since JobIds()
  }
  s.global = pipeline.global_counters();
  s.server = server;
  s.control = control;
  s.now = now;
  return s;
}

void AppendMetrics(const MetricsSnapshot& snapshot, std::string* out) {
  // About 60 bytes a sample: 50 global and job families, 21 per rank.
  size_t ranks = 0;
  for (const JobTelemetry& t : snapshot.jobs) ranks += t.workers.size();
  out->reserve(out->size() + 12'000 + snapshot.jobs.size() * 4'000 + ranks * 1'800);

  Writer w(out);
  Global(w, snapshot);
  Ports(w, snapshot.server);
  Control(w, snapshot.control);
  Jobs(w, snapshot.jobs);
  Ranks(w, snapshot.jobs, snapshot.now);
}

std::string FormatMetrics(const MetricsSnapshot& snapshot) {
  std::string out;
  AppendMetrics(snapshot, &out);
  return out;
}

std::string RenderMetrics(const dataplane::Pipeline& pipeline, const ServerCounters& server,
                          const ControlPlaneCounters& control, dataplane::Timestamp now) {
  return FormatMetrics(SnapshotMetrics(pipeline, server, control, now));
}

}  // namespace serene::switchd
