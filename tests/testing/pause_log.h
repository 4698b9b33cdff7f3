// A policy script that logs what it sees of the ranks' reported pauses
// (rank 0's and rank 1's counts, rank 0's total), and the parse of its last
// log line: for the tests that check a policy sees rank 0's evaluations as
// pauses, in real runs and in the simulator.
#pragma once

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

namespace serene::testing {

struct PauseLine {
  int rank0_pauses = -1;
  int rank1_pauses = -1;
  double rank0_paused_s = -1;
};

// Writes the script to `path`; it keeps sync().
inline void WritePauseLoggingPolicy(const std::string& path) {
  std::ofstream(path) << "function on_telemetry(t)\n"
                         "  log(string.format('pauses %d %d paused %.6f', t.ranks[1].pauses,\n"
                         "                    t.ranks[2].pauses, t.ranks[1].paused))\n"
                         "end\n"
                         "return sync()\n";
}

// The last line the script logged in `log`; nullopt if there is none.
inline std::optional<PauseLine> LastPauseLine(const std::string& log) {
  const size_t at = log.rfind("pauses ");
  if (at == std::string::npos) return std::nullopt;
  PauseLine p;
  if (std::sscanf(log.c_str() + at, "pauses %d %d paused %lf", &p.rank0_pauses, &p.rank1_pauses,
                  &p.rank0_paused_s) != 3) {
    return std::nullopt;
  }
  return p;
}

}  // namespace serene::testing
