// SeedSummary: the runs of a scenario simulated under several seeds, reduced
// to mean ± standard deviation (and range) per run — the form the paper's
// figures and docs/results.md use — as a text table, Markdown, JSON, CSV and
// a gnuplot bar chart with error bars.
//
// Per run and seed, from its experiment::RunSummary:
//   JCT, and JCT as % of the same seed's first run (the baseline);
//   waiting (sum over ranks) and waiting as % of the baseline's;
//   iterations of rank 0, final accuracy, how many seeds reached the target;
//   barrier wait: the time the switch held a rank at the barrier waiting for
//   the others (transfers excluded), mean and max over ranks, and the sum as %
//   of the baseline's sum;
//   the no-wait JCT: max over ranks of (job completion − barrier wait), the
//   JCT had no rank ever waited for another at this run's update counts, and
//   it as % of the baseline's JCT (for SYNC: the no-wait limit).
//
// Pure functions over values (WriteSeedSummary writes files).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "experiment/report.h"

namespace serene::sim {

struct Spread {
  int n = 0;  // values that were not NaN
  double mean = 0, sd = 0, min = 0, max = 0;
};

// Mean, sample standard deviation (0 for one value), min and max of the
// finite values; n = 0 if there are none.
Spread SpreadOf(const std::vector<double>& values);

struct SeedRow {
  std::string label;
  std::string policy;
  int seeds = 0;   // simulated
  int failed = 0;  // of them, failed runs (left out of every spread)
  int reached_target = 0;
  Spread jct_s, jct_pct, wait_s, wait_pct, iterations, accuracy, no_wait_s, no_wait_pct;
  // Time the switch held a rank at the barrier (barrier_hold.h): mean over
  // ranks, the largest rank's, and the sum as % of the baseline's sum.
  Spread barrier_mean_s, barrier_max_s, barrier_pct;
};

// `by_seed[i]` holds seed i's summaries, every seed the same runs in the same
// order, ratios computed (experiment::ComputeRatios).
std::vector<SeedRow> SummarizeSeeds(
    const std::vector<std::vector<experiment::RunSummary>>& by_seed);

// "73.4 ± 1.2" (no spread for one value; "-" for none).
std::string FormatSpread(const Spread& s, int decimals);

std::string SeedTable(const std::vector<SeedRow>& rows);
std::string SeedMarkdown(const std::string& title, const std::vector<SeedRow>& rows);
std::string SeedJson(const std::vector<SeedRow>& rows);
std::string SeedCsv(const std::vector<SeedRow>& rows);

// summary.md, summary.json, summary.csv in `dir`, and with gnuplot on PATH
// summary.png: JCT and waiting as % of the baseline, mean with ± sd bars.
// Returns the PNG's path, or why there is none (the text files are written
// either way). Errors: IoError for a text file.
Result<std::string> WriteSeedSummary(const std::string& dir, const std::string& title,
                                     const std::vector<SeedRow>& rows);

}  // namespace serene::sim
