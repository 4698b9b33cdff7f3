// Runner: executes the runs of a scenario as real processes on this host.
//
// One run, in its own fresh directory out_dir/<n>-<slug(label)>:
//   1. Serene runs: start serene-switch on 127.0.0.1, port 0, with the job
//      (commands.h) and read the address from its "listening on" log line.
//      Dynamic runs (a policy script): read the runtime API's address from
//      its "runtime API at" line and start the script's controller
//      (run_controller.h: job 1, the scenario's control_period_ms) before
//      the ranks; a controller that cannot start fails the run.
//   2. Start the N serene-train ranks (Gloo runs: with a fresh rendezvous
//      directory), each writing rankR.json.
//   3. Wait for every rank, up to the scenario's timeout; ranks still running
//      then are killed and the run fails as timed out. A rank that exits
//      non-zero fails the run with the last lines of its log; the switch is
//      stopped at once so its peers do not wait on it (they fail within the
//      client's deadline; Gloo peers when their connection drops).
//   4. Stop the controller, if any (a script error during the run was logged,
//      not fatal), then the switch with SIGTERM; its log, with the counters
//      it prints when it stops, is kept as switch.log. Every rank's output is
//      kept as rankR.log; a dynamic run's controller events as controller.log
//      and its applied changes as policy_changes.json.
//   5. Read every rank's metrics JSON and summarize them (report.h), with a
//      dynamic run's changes placed on the ranks' run clock (estimated from
//      when the last rank's step-0 line arrived and when each rank exited;
//      docs/experiments.md "The time base of a change").
// Progress lines (which run, elapsed time, rank 0's last step, each rule a
// controller installed) go to the options' callback while it runs, one call
// at a time (possibly from the controller's thread).
//
// The binaries are taken from one directory, by default the running
// binary's own (build/bin), like serene-bench finds its switch.
//
// Thread-compatible: one run at a time per call; a call uses one waiter
// thread per rank internally and joins them before it returns.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "experiment/report.h"
#include "experiment/scenario.h"

namespace serene::experiment {

struct RunnerOptions {
  std::string bin_dir;  // holds serene-switch and serene-train; empty = DefaultBinDir()
  std::string out_dir;  // the experiment directory (created if missing)
  // Receives progress lines (no trailing newline); may be empty.
  std::function<void(std::string_view)> progress;
  std::chrono::milliseconds progress_every{10000};  // between "still running" lines (>= 1 s)
};

// The directory of the running binary (/proc/self/exe), or "." if unknown.
std::string DefaultBinDir();

// "<n>-<slug>" for the run at `index` (0-based): "1-sync", "2-ssp-10".
std::string RunDirName(size_t index, const RunSpec& run);

// Runs scenario.runs[index]; never throws. A failed run comes back as a
// summary whose status says why (FailedRun), with its directory set.
// REQUIRES: ValidateScenario(scenario).ok(), index < scenario.runs.size().
RunSummary ExecuteRun(const Scenario& scenario, size_t index, const RunnerOptions& options);

// Runs every run in order, with a header and a result line per run on the
// progress callback, and computes the ratios against the first run.
std::vector<RunSummary> ExecuteAll(const Scenario& scenario, const RunnerOptions& options);

}  // namespace serene::experiment
