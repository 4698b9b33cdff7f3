// The accuracy-vs-time plot of an experiment: one line per successful run,
// from the evaluating rank's timeline (run clock in seconds, test accuracy),
// with the target accuracy as a dashed line and, for a dynamic run (a policy
// script), a dotted vertical line in the run's colour at each policy change,
// labelled with the rule and the clock it applies from. Drawn by gnuplot
// (Debian's gnuplot-nox) into a PNG; the data files and the gnuplot script
// stay next to it so the figure can be restyled by hand.
//
// Optional by design: without gnuplot on PATH the plot is skipped and the
// caller says so; everything else of the report does not depend on it.
//
// Thread-compatible; runs gnuplot as a child process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "experiment/report.h"
#include "experiment/scenario.h"

namespace serene::experiment {

// The first executable `name` in $PATH, or nullopt.
std::optional<std::string> FindOnPath(const std::string& name);

// Runs gnuplot on `script` (a path relative to `dir`) with `dir` as its
// working directory, so the script's relative paths are dir's. Errors:
// NotFound if gnuplot is not on PATH; Internal with its output if it fails
// or runs over a minute.
Status RunGnuplot(const std::string& dir, const std::string& script);

// The gnuplot script that draws `summaries` from the data files
// plot/<n>-<slug>.dat into `png` (pure; exposed for tests).
std::string GnuplotScript(const Scenario& scenario, const std::vector<RunSummary>& summaries,
                          const std::string& png);

// Writes dir/plot/*.dat and dir/plot/accuracy.gp and runs `gnuplot` on it,
// producing dir/accuracy.png. Returns the PNG's path.
// Errors: NotFound if gnuplot is not on PATH; FailedPrecondition if no run
// has an accuracy timeline; Internal with gnuplot's output if it fails.
Result<std::string> PlotAccuracy(const std::string& dir, const Scenario& scenario,
                                 const std::vector<RunSummary>& summaries);

}  // namespace serene::experiment
