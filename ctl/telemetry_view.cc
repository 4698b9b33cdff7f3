#include "ctl/telemetry_view.h"

#include <fmt/format.h>

#include <map>

#include "ctl/format.h"

namespace serene::ctl {
namespace {

// "READ=12 INC=40", sorted by name; "none" when empty.
std::string CountsText(const google::protobuf::Map<std::string, uint64_t>& counts) {
  const std::map<std::string, uint64_t> sorted(counts.begin(), counts.end());
  std::string text;
  for (const auto& [name, n] : sorted) {
    if (!text.empty()) text += ' ';
    text += fmt::format("{}={}", name, n);
  }
  return text.empty() ? "none" : text;
}

std::string Summary(const v1::JobTelemetry& t) {
  const v1::Job& job = t.job();
  const v1::PolicyState& p = t.policy();
  const v1::JobCounters& c = t.counters();
  std::string out = fmt::format(
      "job {}  workers {} ({} live)  elements {} in {} rows of {}  scale 2^{}  evict after {}\n",
      job.id(), job.workers(), t.live_workers(), job.elements(), t.rows(), job.row_width(),
      job.scale_log2(),
      job.evict_after_ms() == 0 ? "never"
                                : HumanDuration(uint64_t{job.evict_after_ms()} * 1'000'000));
  out += fmt::format(
      "policy {} (epoch {})  pending {}  max released {}\n", RuleText(p.active()), p.active_epoch(),
      p.swap_pending() ? fmt::format("{} from clock {} (epoch {})", RuleText(p.next()),
                                     p.swap_clock(), p.next_epoch())
                       : "-",
      FormatClock(p.max_released()));
  out += fmt::format("clocks low {}  high {}  finished {}  saturated {}\n", FormatClock(t.low()),
                     FormatClock(t.high()), YesNo(t.finished()), YesNo(t.saturated()));
  out += "received " + CountsText(c.rx_by_op()) + "\n";
  out += "drops " + CountsText(c.drops()) + "\n";
  out += fmt::format(
      "releases {}  nacks {}  errors {}  swaps {}  folds {}  completed rows {}  saturations {}\n",
      c.releases(), c.nacks(), c.errors(), c.swaps(), c.folds(), c.completed_rows(),
      c.saturations());
  return out;
}

std::string RankTable(const v1::JobTelemetry& t) {
  Table table({{"RANK", true},
               {"LIVE"},
               {"WAITING"},
               {"DONE", true},
               {"LAG", true},
               {"WAIT NOW", true},
               {"WAIT TOTAL", true},
               {"SILENT", true},
               {"WORK TIME", true},
               {"ITER TIME", true},
               {"PAUSED", true},
               {"PAUSES", true},
               {"INCS DUP", true},
               {"NACKS", true},
               {"ERRORS", true},
               {"ADDRESS"}});
  for (const v1::RankTelemetry& r : t.ranks()) {
    table.AddRow(
        {std::to_string(r.rank()), YesNo(r.live()), YesNo(r.waiting()), FormatClock(r.done()),
         r.done() < 0 ? "-" : std::to_string(r.lag()),
         r.waiting() ? HumanDuration(r.wait_now_ns()) : "-", HumanDuration(r.wait_total_ns()),
         HumanDurationOrDash(r.silent_ns()), r.work_ns() == 0 ? "-" : HumanDuration(r.work_ns()),
         r.iter_ns() == 0 ? "-" : HumanDuration(r.iter_ns()),
         r.pauses() == 0 ? "-" : HumanDuration(r.paused_ns()), std::to_string(r.pauses()),
         std::to_string(r.counters().incs_duplicate()), std::to_string(r.counters().nacks()),
         std::to_string(r.counters().errors()), r.address().empty() ? "-" : r.address()});
  }
  return table.Render();
}

}  // namespace

std::string RenderTelemetry(const v1::JobTelemetry& telemetry) {
  return Summary(telemetry) + '\n' + RankTable(telemetry);
}

}  // namespace serene::ctl
