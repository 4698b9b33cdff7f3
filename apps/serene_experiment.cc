// serene-experiment: runs a scenario (the embedded demo, or a TOML file) as
// real serene-switch and serene-train processes, one run after another, and
// prints the runs side by side. Wiring only: flags -> Scenario -> runner ->
// report files and plot. See docs/experiments.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli_parse.h"
#include "apps/scenario_flags.h"
#include "common/sigpipe.h"
#include "experiment/plot.h"
#include "experiment/report.h"
#include "experiment/runner.h"
#include "experiment/scenario.h"

namespace ex = serene::experiment;

namespace {

int Fail(const std::string& message, int code) {
  fmt::print(stderr, "serene-experiment: {}\n", message);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  serene::IgnoreSigpipe();  // a closed output pipe must not end it mid-run
  CLI::App app{
      "serene-experiment: runs every run of a scenario (default: the demo, 4 MLP ranks with\n"
      "slow_worker stragglers under SYNC, SSP(10), the adaptive policy script and the Gloo\n"
      "baseline) as real processes on this host and reports job completion time, waiting\n"
      "time, iterations, accuracy and policy changes side by side (results.json/csv/md and\n"
      "accuracy.png in --out)."};
  std::string out, bin_dir;
  bool print_scenario = false;
  serene::apps::ScenarioFlags flags(
      app,
      "Runs, comma-separated: gloo, gloo:ALGORITHM (halving-doubling or ring-chunked), "
      "serene:sync, serene:ssp:W, serene:async, serene:quorum:K:L, or a policy script "
      "(policies/adaptive.lua)");
  app.add_option("--out,-o", out, "Output directory (default: results/<name>-<time>)");
  app.add_option("--bin-dir", bin_dir,
                 "Directory of serene-switch and serene-train (default: this binary's)");
  app.add_flag("--print-scenario", print_scenario, "Print the scenario as TOML and exit");
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

  auto scenario = flags.Build();
  if (!scenario.ok()) return Fail(scenario.status().message(), 2);
  if (auto s = ex::ValidateScenario(*scenario); !s.ok()) return Fail(s.message(), 2);
  if (print_scenario) {
    fmt::print("{}", ex::ScenarioToToml(*scenario));
    return 0;
  }

  ex::RunnerOptions o;
  o.bin_dir = bin_dir;
  o.out_dir = out.empty() ? serene::apps::DefaultOutDir("", *scenario) : out;
  o.progress = [](std::string_view line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  if (auto s = ex::WriteTextFile(o.out_dir + "/scenario.toml", ex::ScenarioToToml(*scenario));
      !s.ok()) {
    return Fail(s.message(), 1);
  }
  std::string labels;
  for (const ex::RunSpec& r : scenario->runs) labels += (labels.empty() ? "" : ", ") + r.label;
  fmt::print(
      "serene-experiment '{}': {} x {} ranks, straggler {} on ranks {}, target {}, "
      "budget {} steps; runs: {}{}\noutput: {}\n\n",
      scenario->name, scenario->workers, serene::train::ModelKindName(scenario->model),
      scenario->straggler, scenario->straggler_ranks, scenario->target_accuracy, scenario->steps,
      labels,
      scenario->switch_fault.empty() ? "" : "; switch fault injection " + scenario->switch_fault,
      o.out_dir);
  std::fflush(stdout);

  const std::vector<ex::RunSummary> summaries = ex::ExecuteAll(*scenario, o);
  fmt::print("\n{}\n", ex::FormatTable(summaries));
  if (auto s = ex::WriteReport(o.out_dir, *scenario, summaries); !s.ok()) {
    return Fail(s.message(), 1);
  }
  auto png = ex::PlotAccuracy(o.out_dir, *scenario, summaries);
  fmt::print("results: {0}/results.md, {0}/results.csv, {0}/results.json\n", o.out_dir);
  fmt::print("plot: {}\n", png.ok() ? *png : "skipped: " + png.status().message());
  const bool all_ok = std::all_of(summaries.begin(), summaries.end(),
                                  [](const ex::RunSummary& r) { return r.status.ok(); });
  return all_ok ? 0 : 1;
}
