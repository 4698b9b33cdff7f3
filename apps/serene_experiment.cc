// serene-experiment: runs a scenario (the embedded demo, or a TOML file) as
// real serene-switch and serene-train processes, one run after another, and
// prints the runs side by side. Wiring only: flags -> Scenario -> runner ->
// report files and plot. See docs/experiments.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli_parse.h"
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

std::string DefaultOutDir(const ex::Scenario& s) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "results/" + ex::Slug(s.name) + "-" + stamp;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "serene-experiment: runs every run of a scenario (default: the demo, 4 MLP ranks with\n"
      "slow_worker stragglers under SYNC, SSP(10), the adaptive policy script and the Gloo\n"
      "baseline) as real processes on this host and reports job completion time, waiting\n"
      "time, iterations, accuracy and policy changes side by side (results.json/csv/md and\n"
      "accuracy.png in --out)."};
  std::string config, out, bin_dir, runs;
  bool quick = false, print_scenario = false;
  // Flags that override one scenario key each: {flag, key, help}.
  const std::vector<std::array<std::string, 3>> overrides = {
      {"--workers", "workers", "Training ranks"},
      {"--model", "model", "mlp or cnn"},
      {"--steps", "steps", "Step budget per rank"},
      {"--target", "target_accuracy", "Stop at this test accuracy, 0 = never"},
      {"--eval-every", "eval_every", "Steps between evaluations on rank 0"},
      {"--eval-samples", "eval_samples", "Test examples per evaluation, 0 = all"},
      {"--seed", "seed", "Seed of model, data order and stragglers"},
      {"--lr", "lr", "SGD learning rate"},
      {"--batch", "batch", "Examples per rank per step"},
      {"--straggler", "straggler", "Straggler pattern (docs/training.md), or none"},
      {"--straggler-ranks", "straggler_ranks", "Ranks that straggle: all or a list"},
      {"--row", "row", "Values per switch row (4096 suits loopback's 64 KiB MTU)"},
      {"--threads", "threads", "libtorch threads per rank"},
      {"--timeout", "timeout", "Seconds per run before its ranks are killed"},
      {"--control-period", "control_period_ms",
       "Telemetry period of a policy script's controller, ms"},
      {"--switch-fault", "switch_fault",
       "Fault injection at each Serene run's switch (serene-switch --fault SPEC), "
       "e.g. drop=0.02,delay=0..20ms,seed=3,dir=both"},
      {"--name", "name", "Experiment name"}};
  std::vector<std::string> values(overrides.size());
  std::vector<CLI::Option*> options;
  app.add_option("--config,-c", config, "Scenario TOML file (default: the embedded demo)");
  app.add_option("--runs", runs,
                 "Runs, comma-separated: gloo, gloo:ALGORITHM (halving-doubling or ring-chunked), "
                 "serene:sync, serene:ssp:W, serene:async, serene:quorum:K:L, or a policy script "
                 "(policies/adaptive.lua)");
  for (size_t i = 0; i < overrides.size(); ++i) {
    const std::string now = ex::ScenarioValueText(ex::DefaultScenario(), overrides[i][1]);
    options.push_back(
        app.add_option(overrides[i][0], values[i], overrides[i][2] + " (default " + now + ")"));
  }
  app.add_flag("--quick", quick, "CI-sized job: 2 ranks, 30 steps, no target (flags still apply)");
  app.add_option("--out,-o", out, "Output directory (default: results/<name>-<time>)");
  app.add_option("--bin-dir", bin_dir,
                 "Directory of serene-switch and serene-train (default: this binary's)");
  app.add_flag("--print-scenario", print_scenario, "Print the scenario as TOML and exit");
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

  auto scenario = config.empty() ? serene::Result<ex::Scenario>(ex::DefaultScenario())
                                 : ex::LoadScenarioFile(config);
  if (!scenario.ok()) return Fail(scenario.status().message(), 2);
  if (quick) ex::ApplyQuick(&*scenario);
  for (size_t i = 0; i < overrides.size(); ++i) {
    if (options[i]->count() == 0) continue;
    auto s = ex::SetScenarioValue(overrides[i][1], values[i], overrides[i][0], &*scenario);
    if (!s.ok()) return Fail(s.message(), 2);
  }
  if (!runs.empty()) {
    auto list = ex::ParseRunList(runs);
    if (!list.ok()) return Fail(list.status().message(), 2);
    scenario->runs = *list;
  }
  if (auto s = ex::ValidateScenario(*scenario); !s.ok()) return Fail(s.message(), 2);
  if (print_scenario) {
    fmt::print("{}", ex::ScenarioToToml(*scenario));
    return 0;
  }

  ex::RunnerOptions o;
  o.bin_dir = bin_dir;
  o.out_dir = out.empty() ? DefaultOutDir(*scenario) : out;
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
