// BenchReport: what one run of the real serene-bench binary printed, parsed
// back into numbers the fault tests can check: its exit code, each rank's row
// of the table (clocks, pulls checked, retransmissions, result), the summary
// line, and the counters of the switch it started (the fault injectors' and,
// per rank, INCs applied and ignored as duplicates).
//
// serene-bench has no machine-readable output; this parser reads the text
// formats of apps/serene_bench.cc (the table) and switch/counters_report.cc
// (the switch's exit counters, which serene-bench prints after its table).
//
// BenchProcess runs the binary and, should it outlive its guard, kills it and
// every process it started (its workers and its switch), so a hang fails the
// test instead of leaving processes behind. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "testing/fault_check.h"

namespace serene::faults {

// One rank's row of serene-bench's table.
struct BenchRank {
  uint32_t rank = 0;
  bool reported = false;         // false: "stopped" or "died" instead of a row
  bool stopped = false;          // ended because another rank failed
  std::optional<int> died_exit;  // "died (exit N) without a report"
  uint32_t clocks = 0;
  uint32_t checked = 0;  // pulls compared with the exact sum
  double seconds = 0;
  uint64_t re_reads = 0;
  uint64_t re_clocks = 0;
  uint64_t nacks = 0;
  bool ok = false;
  std::string error;  // after "FAILED: "
};

// One direction's fault injector counters ("faults rx: ..." / "faults tx: ...").
using testing::InjectorCounters;

// One "rank N ..." line of the switch's counters.
struct SwitchRank {
  uint32_t rank = 0;
  int64_t done = -1;  // -1: "-"
  bool waiting = false;
  bool left = false;
  uint64_t joins = 0, reads = 0, incs = 0, inc_dups = 0, clocks = 0, nacks = 0, releases = 0,
           errors = 0;
};

// The switch's exit counters (one job: serene-bench's).
struct SwitchCounters {
  bool present = false;  // "=== serene-switch counters ===" seen
  std::optional<InjectorCounters> rx, tx;
  std::map<std::string, uint64_t> requests;  // op -> count
  std::map<std::string, uint64_t> drops;     // reason -> count
  uint64_t releases = 0, nacks = 0, errors = 0;
  std::vector<SwitchRank> ranks;
};

struct BenchReport {
  std::optional<int> exit_code;  // nullopt: it outlived its guard and was killed
  double wall_seconds = 0;       // from start to exit, as the test saw it
  std::string output;            // everything it printed

  std::vector<BenchRank> ranks;
  bool summary_seen = false;
  bool summary_ok = false;  // the summary line starts with "OK:"
  uint64_t retransmissions = 0, nacks = 0;  // the summary's totals
  SwitchCounters sw;
};

// Parses serene-bench's output (exit code and wall time are left unset).
BenchReport ParseBenchOutput(const std::string& output);

// testing::ExpectFaultsFired (testing/fault_check.h) on a run: the switch's
// injectors did what `spec` configures, and, if `expect_retransmissions`
// and the spec loses requests, the ranks re-sent something (serene-bench's
// READ and CLOCK retransmissions plus the NACKs that had INC rows re-sent).
void ExpectFaultsFired(const std::string& spec, const BenchReport& r, bool expect_retransmissions);

// Processes whose parent is `parent` (from /proc), with their command names.
struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;
};
std::vector<ProcessInfo> ChildrenOf(pid_t parent);

// serene-bench as a child process.
class BenchProcess {
 public:
  BenchProcess(const std::string& binary, const std::vector<std::string>& args);

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Waits until the output contains `text`; false if it did not within `guard`.
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds guard);

  // Waits for the exit, up to `guard`; then SIGKILLs the bench and every
  // process it started. Parses the output.
  BenchReport Finish(std::chrono::milliseconds guard);

 private:
  std::chrono::steady_clock::time_point started_at_;
  std::unique_ptr<loadgen::ChildProcess> child_;
  pid_t pid_ = -1;
};

}  // namespace serene::faults
