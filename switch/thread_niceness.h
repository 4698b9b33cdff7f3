// The niceness (Linux's per-thread CFS weight, -20..19) of the switch's loop
// threads. On a host whose cores the switch shares with workers, the switch
// is the one process every worker waits for — in a deployment it is a device
// of its own — so it may run at a lower niceness than the workers
// (`--nice`, docs/switch.md).
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace serene::switchd {

inline constexpr int kMinNice = -20;
inline constexpr int kMaxNice = 19;

// Parses a niceness, "-20".."19"; nullopt for anything else. Inline: the
// bench that starts a switch parses it too without linking the daemon.
inline std::optional<int> ParseNiceness(std::string_view text) {
  int v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < kMinNice || v > kMaxNice) {
    return std::nullopt;
  }
  return v;
}

// Sets the calling thread's niceness. Fails (FailedPrecondition, naming what
// is needed) when the process may not lower its niceness that far: below
// the current value takes root, CAP_SYS_NICE or RLIMIT_NICE.
Status SetThreadNiceness(int nice);

// Whether a new thread could be given `nice`: tried on a short-lived thread,
// so the caller's own niceness is left alone.
Status CheckThreadNiceness(int nice);

// Puts the calling thread under SCHED_BATCH, keeping its niceness: the
// scheduler does not let it preempt the running thread when it wakes (a
// datagram arrived), so on cores it shares with the workers a loop thread
// runs at its weight's share but in fewer, longer turns — one per train of
// datagrams cost two context switches when it preempted the sending worker.
// Needs no privilege.
Status SetThreadBatchScheduling();

}  // namespace serene::switchd
