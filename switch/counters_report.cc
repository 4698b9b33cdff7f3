#include "switch/counters_report.h"

#include <fmt/format.h>

#include <iterator>

#include "net/address.h"
#include "proto/codec.h"

namespace serene::switchd {
namespace {

using Out = std::back_insert_iterator<std::string>;

void Faults(Out out, std::string_view dir, const net::FaultCounters& f) {
  if (f.offered == 0) return;
  fmt::format_to(out,
                 "faults {}: offered={} delivered={} dropped={} duplicated={} reordered={} "
                 "held_expired={} delayed={}\n",
                 dir, f.offered, f.delivered, f.dropped, f.duplicated, f.reordered, f.held_expired,
                 f.delayed);
}

std::string Clock(uint32_t c) {
  return c == proto::kNoClock ? std::string("-") : std::to_string(c);
}

void Job(Out out, const dataplane::JobTelemetry& t) {
  const auto& c = t.counters;
  fmt::format_to(
      out, "job {} [{}]: live {}/{} low={} high={} max_released={} epoch={} active={}{}{}{}\n",
      t.config.id, t.config.ToString(), t.live_workers, t.config.workers, Clock(t.low),
      Clock(t.high), Clock(t.max_released), t.active_epoch, t.active.ToString(),
      t.swap_pending ? " (swap pending)" : "", t.saturated ? " SATURATED" : "",
      t.finished ? " finished" : "");
  fmt::format_to(out, "  requests:");
  for (uint8_t op = proto::kMinOp; op <= proto::kMaxOp; ++op) {
    const auto o = static_cast<proto::Op>(op);
    if (proto::IsRequest(o)) fmt::format_to(out, " {}={}", proto::OpName(o), c.rx_by_op[op]);
  }
  fmt::format_to(out,
                 "\n  replies: releases={} nacks={} errors={}; table: saturations={} folds={} "
                 "completed_rows={}; swaps={}\n",
                 c.releases, c.nacks, c.errors, c.saturations, c.folds, c.completed_rows, c.swaps);
  fmt::format_to(out, "  drops:");
  bool any = false;
  for (size_t r = 0; r < dataplane::kNumDropReasons; ++r) {
    if (c.drops[r] == 0) continue;
    fmt::format_to(out, " {}={}", dataplane::DropReasonName(static_cast<dataplane::DropReason>(r)),
                   c.drops[r]);
    any = true;
  }
  fmt::format_to(out, "{}\n", any ? "" : " none");
  for (const auto& w : t.workers) {
    const auto& wc = w.counters;
    // The switch address the rank's JOIN reached, when the daemon knows it.
    std::string where = w.joined ? net::FormatEndpoint(w.addr) : std::string("(not joined)");
    if (w.joined && w.local.valid()) where += " via " + net::FormatEndpoint(w.local);
    fmt::format_to(out,
                   "  rank {} {} done={}{}{} joins={} reads={} incs={} inc_dups={} clocks={} "
                   "nacks={} releases={} errors={} wait={:.3f}ms\n",
                   w.rank, where, Clock(w.done), w.waiting ? " waiting" : "", w.live ? "" : " left",
                   wc.joins, wc.reads, wc.incs_applied, wc.incs_duplicate, wc.clocks, wc.nacks,
                   wc.releases, wc.errors, static_cast<double>(wc.wait_ns) / 1e6);
  }
}

}  // namespace

std::string FormatCountersReport(const dataplane::Pipeline& pipeline,
                                 const ServerCounters& server) {
  std::string text;
  Out out(text);
  fmt::format_to(out, "=== serene-switch counters ===\n");
  fmt::format_to(out,
                 "ports: rx={} datagrams ({} bytes) truncated={} rx_errors={}; tx={} datagrams "
                 "({} bytes) tx_errors={}; control_tx={}\n",
                 server.rx_datagrams, server.rx_bytes, server.rx_truncated, server.rx_errors,
                 server.tx_datagrams, server.tx_bytes, server.tx_errors, server.control_tx);
  Faults(out, "rx", server.rx_faults);
  Faults(out, "tx", server.tx_faults);

  const dataplane::GlobalCounters g = pipeline.global_counters();
  fmt::format_to(out, "pipeline: packets={} unknown_job={} not_request={} bad_key={}\n", g.packets,
                 g.unknown_job, g.not_request, g.bad_key);
  fmt::format_to(out, "parse errors:");
  bool any = false;
  for (size_t e = 1; e < proto::kNumParseErrors; ++e) {
    if (g.parse_errors[e] == 0) continue;
    fmt::format_to(out, " {}={}", proto::ParseErrorName(static_cast<proto::ParseError>(e)),
                   g.parse_errors[e]);
    any = true;
  }
  fmt::format_to(out, "{}\n", any ? "" : " none");

  for (uint16_t id : pipeline.JobIds()) {
    auto t = pipeline.Telemetry(id);
    if (t.ok()) Job(out, *t);  // a job deleted meanwhile is simply skipped
  }
  return text;
}

}  // namespace serene::switchd
