// Report: what each run of an experiment measured, reduced to the numbers
// the paper compares (DESIGN.md §7), and those numbers as an aligned text
// table, JSON, CSV and Markdown.
//
// Per run, from every rank's metrics (train/metrics.h):
//   job completion time  max over ranks of job_completion_s: the job is done
//                        when its last rank stopped. When the target is
//                        reached that is the target time plus the round in
//                        which the other ranks learn of it; it is defined
//                        for every stop reason, so runs that miss the target
//                        still compare. The evaluating rank's target time is
//                        reported beside it.
//   waiting time         sum over ranks of wait_s (time blocked in Pull and
//                        Push), and its mean per rank.
//   iterations           rank 0's and the mean over ranks.
//   per iteration        over every rank's iterations: compute (sum of
//                        compute_s / sum of iterations), communication
//                        (sum of wait_s / sum of iterations: pull + push +
//                        clock, or the allreduce, waiting for others
//                        included) and the communication share of a step,
//                        100 × wait / (compute + straggler sleep + wait);
//                        evaluation is not part of a step.
//   final accuracy, stop reason, timeline  the evaluating rank's (the lowest
//                        rank with evaluates = true; rank 0 in experiments).
// Ratios are relative to the first run (the baseline, SYNC in the demo):
// JCT and waiting time as % of the baseline's, like the paper's figures.
// A dynamic run (a policy script, scenario.h) also lists the rule changes its
// controller installed (PolicyChange), on the ranks' run clock.
//
// Pure functions over values (WriteReport writes files); thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "experiment/scenario.h"
#include "train/metrics.h"

namespace serene::experiment {

// One rule a dynamic run's controller installed on the switch.
struct PolicyChange {
  // When the controller installed it, in seconds of the ranks' run clock
  // (train/metrics.h: 0 = when every rank held the initial model, the time
  // base of the timeline). Negative: installed before training started.
  // The ranks' metrics carry no wall clock, so the runner estimates where
  // their run clock started on its own clock from when each rank process
  // exited and its job_completion_s (runner.h); NaN if unknown.
  double seconds = train::kNaN;
  uint64_t unix_ms = 0;          // wall clock when it was installed
  int64_t high = -1;             // the job's fastest clock then (-1: unknown)
  uint32_t effective_clock = 0;  // the switch judges CLOCK(c) by it iff c >= this
  std::string rule;              // "ssp:4" (dataplane::BarrierParams::ToString)
  uint32_t epoch = 0;            // the switch's policy epoch it installed
};

struct RunSummary {
  RunSpec spec;
  Status status;                // not ok: the run failed (the message says why); numbers are NaN
  std::string dir;              // the run directory, if any
  double wall_s = train::kNaN;  // launcher's clock: first rank started -> last rank exited

  int workers = 0;
  double jct_s = train::kNaN;                 // max over ranks of job_completion_s
  double target_reached_s = train::kNaN;      // evaluating rank's; NaN if not reached
  double wait_total_s = train::kNaN;          // sum over ranks of wait_s
  double wait_mean_s = train::kNaN;           // wait_total_s / workers
  double barrier_wait_total_s = train::kNaN;  // sum of barrier_wait_s
  double compute_mean_s = train::kNaN;        // mean of compute_s
  double straggler_sleep_total_s = train::kNaN;
  // Per iteration, over every rank's iterations (NaN without iterations).
  double compute_per_iteration_s = train::kNaN;  // sum of compute_s / sum of iterations
  double comm_per_iteration_s = train::kNaN;     // sum of wait_s / sum of iterations
  double comm_share_pct = train::kNaN;           // 100 × wait / (compute + straggler sleep + wait)
  int64_t slowed_iterations = 0;                 // sum over ranks
  int64_t iterations_rank0 = 0;
  double iterations_mean = train::kNaN;
  double final_accuracy = train::kNaN;  // evaluating rank's
  std::string stop_reason;              // evaluating rank's
  int evaluating_rank = -1;

  // 100 × this run's value / the first run's (NaN for a failed run or baseline).
  double jct_pct_of_baseline = train::kNaN;
  double wait_pct_of_baseline = train::kNaN;

  std::vector<train::RunMetrics> ranks;        // by rank
  std::vector<train::TimelinePoint> timeline;  // evaluating rank's

  // A dynamic run's rule changes, in order (empty for other runs, and for a
  // dynamic run that failed: its run directory's policy_changes.json has them).
  std::vector<PolicyChange> policy_changes;
};

// True for a run whose rule a policy script's controller sets.
bool IsDynamic(const RunSummary& r);

// A dynamic run's changes in a line: "2.1 s clock 85 → ssp:6; 9.8 s clock
// 400 → ssp:3" (run clock, the clock the rule applies from, the rule);
// "before training" for a change installed before the run clock started;
// "none (sync throughout)" when there was none.
std::string PolicyChangesText(const RunSummary& r);

// Reduces a run's per-rank metrics. `ranks` must hold ranks 0..N-1 in order,
// each with world_size N. Errors: InvalidArgument otherwise.
Result<RunSummary> Summarize(const RunSpec& spec, std::vector<train::RunMetrics> ranks);

// The row of a run that failed with `why`.
RunSummary FailedRun(const RunSpec& spec, Status why);

// Fills the ratios of every run against summaries[0] (left NaN if the first
// run failed or measured zero).
void ComputeRatios(std::vector<RunSummary>* summaries);

// The runs side by side (one column each), metrics as rows, aligned for a
// terminal; each dynamic run's policy changes and failed runs' errors are
// listed under the table.
std::string FormatTable(const std::vector<RunSummary>& summaries);

// results.json: {"scenario": {...}, "runs": [{... per-run numbers, "params":
// {...}, "ranks": [...], "timeline": [...], "policy_changes": [...]}]}; NaN
// is null.
std::string ReportJson(const Scenario& scenario, const std::vector<RunSummary>& summaries);

// results.csv: a header and one row per run; NaN is an empty cell.
std::string ReportCsv(const std::vector<RunSummary>& summaries);

// results.md: the scenario in a sentence, the side-by-side table and each
// dynamic run's policy changes.
std::string ReportMarkdown(const Scenario& scenario, const std::vector<RunSummary>& summaries);

// Writes results.json, results.csv and results.md into `dir`.
// Errors: IoError naming the file.
Status WriteReport(const std::string& dir, const Scenario& scenario,
                   const std::vector<RunSummary>& summaries);

// Writes `text` to `path` (parents created). Errors: IoError naming the path.
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace serene::experiment
