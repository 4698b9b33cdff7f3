// ReorderWindow: how long a READ reply may still arrive after replies to
// requests sent later (RACK's reordering window, RFC 8985, measured rather
// than assumed). A row that later replies overtook is taken for lost only
// once it is that late, so reordering on the path (delay jitter) costs
// waiting, not re-sent requests.
//
// The window is 1.5 x the largest extent of reordering seen in the current
// and the previous second, at most kMax. With no reordering seen it is zero:
// a row that three later replies passed is re-sent at once, so a loss costs
// no waiting where nothing reorders. Rows passed by fewer than three replies
// are never re-sent early and their lateness is measured, so under jitter
// the window grows; the margin lets it reach a wider jitter in a few steps.
// Beyond the cap (the timeout's floor) the timeout acts anyway.
//
// Not measured: a reply overtaken three times or more before the window
// grew is re-sent, and the reply that comes is ambiguous (Karn). A path that
// only ever reorders by three or more, and never by less, is not learned.
#pragma once

#include <algorithm>
#include <chrono>

#include "client/windowed_max.h"

namespace serene::client {

class ReorderWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kMax = std::chrono::milliseconds(10);

  // A reply that arrived `extent` after the first reply that overtook it.
  void Sample(Clock::duration extent, Clock::time_point now) { seen_.Add(extent, now); }
  Clock::duration Get() const {
    const Clock::duration seen = seen_.Get();
    return std::min<Clock::duration>(seen + seen / 2, kMax);
  }

 private:
  WindowedMax seen_;
};

}  // namespace serene::client
