#include "ctl/top_view.h"

#include <fmt/format.h>

#include <ctime>
#include <map>

#include "ctl/format.h"

namespace serene::ctl {
namespace {

// "12:03:04" in local time, from the snapshot's wall clock.
std::string TimeOfDay(uint64_t unix_ms) {
  const auto seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (localtime_r(&seconds, &tm) == nullptr) return "";
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string RateText(const std::optional<double>& rate) { return rate ? FormatRate(*rate) : "-"; }

std::string PendingText(const v1::PolicyState& p) {
  if (!p.swap_pending()) return "-";
  return fmt::format("{} from clock {} (epoch {})", RuleText(p.next()), p.swap_clock(),
                     p.next_epoch());
}

}  // namespace

std::optional<double> ClockRate(int64_t prev_done, uint64_t prev_ns, int64_t done,
                                uint64_t now_ns) {
  if (prev_done < 0 || done < 0 || now_ns <= prev_ns || done < prev_done) return std::nullopt;
  return static_cast<double>(done - prev_done) * 1e9 / static_cast<double>(now_ns - prev_ns);
}

std::string RenderTop(const v1::JobTelemetry* previous, const v1::JobTelemetry& current,
                      const TopContext& context) {
  const v1::Job& job = current.job();
  const v1::PolicyState& policy = current.policy();
  std::string out =
      fmt::format("serene-ctl top: job {} on {}  {}  every {}, Ctrl-C quits\n", job.id(),
                  context.address, TimeOfDay(current.unix_ms()),
                  HumanDuration(static_cast<uint64_t>(context.period.count()) * 1'000'000));

  std::optional<double> job_rate;
  if (previous != nullptr) {
    job_rate = ClockRate(previous->high(), previous->now_ns(), current.high(), current.now_ns());
  }
  out +=
      fmt::format("policy {}  epoch {}  pending {}  max released {}\n", RuleText(policy.active()),
                  policy.active_epoch(), PendingText(policy), FormatClock(policy.max_released()));
  out += fmt::format("live {}/{}  low {}  high {}  rate {} clocks/s{}{}\n", current.live_workers(),
                     job.workers(), FormatClock(current.low()), FormatClock(current.high()),
                     RateText(job_rate), current.finished() ? "  FINISHED" : "",
                     current.saturated() ? "  SATURATED" : "");
  out += '\n';

  // The previous snapshot's clock of each rank, for the pace.
  std::map<uint32_t, int64_t> previous_done;
  if (previous != nullptr) {
    for (const v1::RankTelemetry& r : previous->ranks()) previous_done[r.rank()] = r.done();
  }
  Table table({{"RANK", true},
               {"LIVE"},
               {"CLOCK", true},
               {"LAG", true},
               {"WAITING"},
               {"WAIT NOW", true},
               {"WAIT TOTAL", true},
               {"CLOCKS/S", true},
               {"WORK", true},
               {"SILENT", true}});
  const int ranks = current.ranks_size();
  int shown = ranks;
  if (context.max_rank_rows > 0 && static_cast<size_t>(ranks) > context.max_rank_rows) {
    shown = static_cast<int>(context.max_rank_rows) - 1;  // one line says how many are hidden
  }
  for (int i = 0; i < shown; ++i) {
    const v1::RankTelemetry& r = current.ranks(i);
    std::optional<double> rate;
    auto it = previous_done.find(r.rank());
    if (it != previous_done.end()) {
      rate = ClockRate(it->second, previous->now_ns(), r.done(), current.now_ns());
    }
    table.AddRow({std::to_string(r.rank()), YesNo(r.live()), FormatClock(r.done()),
                  r.done() < 0 ? "-" : std::to_string(r.lag()), YesNo(r.waiting()),
                  r.waiting() ? HumanDuration(r.wait_now_ns()) : "-",
                  HumanDuration(r.wait_total_ns()), RateText(rate),
                  r.work_ns() == 0 ? "-" : HumanDuration(r.work_ns()),
                  HumanDurationOrDash(r.silent_ns())});
  }
  out += table.Render();
  if (shown < ranks) {
    out +=
        fmt::format("... {} more rank(s): enlarge the terminal, or see `serene-ctl telemetry {}`\n",
                    ranks - shown, job.id());
  }
  return out;
}

}  // namespace serene::ctl
