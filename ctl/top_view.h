// TopView: the text of one `serene-ctl top` frame, rendered from the latest
// telemetry snapshot of a job and the one before it — a job header (policy,
// epoch, pending change, live ranks, low/high clocks, pace) and a row per rank
// (clock, lag, waiting, wait total, pace, silence). The pace is clocks per
// second between the two snapshots, measured on the switch's own clock
// (now_ns), so it does not depend on when the frames reached us.
//
// Pure: no terminal control here (the caller clears the screen); thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "control/runtime.pb.h"

namespace serene::ctl {

namespace v1 = ::serene::control::v1;

struct TopContext {
  std::string address;                     // the switch's runtime API, for the title
  std::chrono::milliseconds period{1000};  // refresh period, for the title
  // At most this many rank rows (the rest summarized in one line, so a frame
  // fits the terminal); 0 = every rank.
  size_t max_rank_rows = 0;
};

// Clocks per second from (prev_done at prev_ns) to (done at now_ns): nullopt
// when either clock is -1, the time did not advance, or the clock went back.
std::optional<double> ClockRate(int64_t prev_done, uint64_t prev_ns, int64_t done, uint64_t now_ns);

// The frame for `current`; `previous` (may be null: the first frame, rates
// shown as "-") must be an earlier snapshot of the same job. Lines end with
// '\n': 5 lines of header, then the rank rows (and the summary line).
std::string RenderTop(const v1::JobTelemetry* previous, const v1::JobTelemetry& current,
                      const TopContext& context);

}  // namespace serene::ctl
