// What serene-experiment and serene-sim share on their command lines: one
// flag per scenario key (experiment/scenario.h), registered on a CLI11 app and
// applied on top of the loaded scenario, and the default output directory.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <ctime>
#include <string>
#include <vector>

#include "common/status.h"
#include "experiment/scenario.h"

namespace serene::apps {

// results/<prefix><name>-<local time>: where a report goes by default.
inline std::string DefaultOutDir(const std::string& prefix, const experiment::Scenario& s) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "results/" + prefix + experiment::Slug(s.name) + "-" + stamp;
}

class ScenarioFlags {
 public:
  // Registers --config, --runs (help `runs_help`), the flag of every key
  // (its help naming the embedded default's value) and --quick.
  ScenarioFlags(CLI::App& app, const std::string& runs_help) {
    app.add_option("--config,-c", config_, "Scenario TOML file (default: the embedded demo)");
    app.add_option("--runs", runs_, runs_help);
    values_.resize(kFlags.size());
    for (size_t i = 0; i < kFlags.size(); ++i) {
      const std::string now =
          experiment::ScenarioValueText(experiment::DefaultScenario(), kFlags[i][1]);
      options_.push_back(
          app.add_option(kFlags[i][0], values_[i], kFlags[i][2] + " (default " + now + ")"));
    }
    app.add_flag("--quick", quick_,
                 "CI-sized job: 2 ranks, 30 steps, no target (flags still apply)");
    app.add_option("--run-filter", run_filter_,
                   "Keep only some of the scenario's runs: all, fixed (every run but a policy "
                   "script's) or scripts (the runs of a policy script, e.g. to re-run a changed "
                   "policy beside fixed runs that did not change)")
        ->check(CLI::IsMember({"all", "fixed", "scripts"}))
        ->default_val("all");
  }

  // The scenario the command line asks for: the file (or the embedded demo),
  // shrunk by --quick, then every flag given, the run list and --run-filter. Not yet
  // validated (ValidateScenario). Errors: the file's, SetScenarioValue's and
  // ParseRunList's, naming the flag.
  Result<experiment::Scenario> Build() const {
    auto s = config_.empty() ? Result<experiment::Scenario>(experiment::DefaultScenario())
                             : experiment::LoadScenarioFile(config_);
    if (!s.ok()) return s;
    if (quick_) experiment::ApplyQuick(&*s);
    for (size_t i = 0; i < kFlags.size(); ++i) {
      if (options_[i]->count() == 0) continue;
      Status st = experiment::SetScenarioValue(kFlags[i][1], values_[i], kFlags[i][0], &*s);
      if (!st.ok()) return st;
    }
    if (!runs_.empty()) {
      auto list = experiment::ParseRunList(runs_);
      if (!list.ok()) return list.status();
      s->runs = *list;
    }
    if (run_filter_ != "all") {
      std::string labels;
      for (const auto& r : s->runs) labels += (labels.empty() ? "" : ", ") + r.label;
      const bool scripts = run_filter_ == "scripts";
      std::erase_if(s->runs, [&](const experiment::RunSpec& r) {
        return experiment::IsPolicyScript(r.policy) != scripts;
      });
      if (s->runs.empty()) {
        return Status::InvalidArgument("--run-filter " + run_filter_ +
                                       " leaves no run of the scenario (its runs: " + labels + ")");
      }
    }
    return s;
  }

 private:
  // {flag, key, help}.
  inline static const std::vector<std::array<std::string, 3>> kFlags = {
      {"--workers", "workers", "Training ranks"},
      {"--model", "model", "mlp or cnn"},
      {"--steps", "steps", "Step budget per rank"},
      {"--target", "target_accuracy", "Stop at this test accuracy, 0 = never"},
      {"--eval-every", "eval_every", "Steps between evaluations on rank 0"},
      {"--eval-samples", "eval_samples", "Test examples per evaluation, 0 = all"},
      {"--seed", "seed", "Seed of model, data order and stragglers"},
      {"--lr", "lr", "SGD learning rate"},
      {"--momentum", "momentum", "SGD momentum per rank, 0 <= m < 1 (0 = none)"},
      {"--compute-floor", "compute_floor_ms",
       "Each step's computation lasts at least this many ms, the rest slept (0 = none)"},
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
      {"--group", "group",
       "Give each Serene run's job a reply group on the loopback (IPv4 multicast): on or off"},
      {"--name", "name", "Experiment name"}};

  std::string config_, runs_, run_filter_ = "all";
  bool quick_ = false;
  std::vector<std::string> values_;
  std::vector<CLI::Option*> options_;
};

}  // namespace serene::apps
