// serene-sim: runs a scenario of serene-experiment (the embedded demo, or a
// TOML file) in the virtual-time simulator — the real data plane and, unless
// --timing-only, the real training math, with time from a compute model and a
// link model instead of this machine's clock — and reports the runs side by
// side like serene-experiment. Wiring only: flags -> Scenario + SimSettings
// -> SimulateRun per run -> report files and plot. See docs/simulator.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli_parse.h"
#include "apps/scenario_flags.h"
#include "common/duration.h"
#include "experiment/plot.h"
#include "experiment/report.h"
#include "experiment/scenario.h"
#include "sim/sim_runner.h"
#include "sim/torch_work.h"
#include "train/fashion_mnist.h"

namespace ex = serene::experiment;
namespace sim = serene::sim;
namespace st = serene::train;

namespace {

int Fail(const std::string& message, int code) {
  fmt::print(stderr, "serene-sim: {}\n", message);
  return code;
}

std::string SimStatsLine(const sim::SimulationResult& r) {
  uint64_t read_rtx = 0, clock_rtx = 0, nacks = 0;
  for (const sim::RankCounters& c : r.counters) {
    read_rtx += c.read_retransmits;
    clock_rtx += c.clock_retransmits;
    nacks += c.nacks;
  }
  return fmt::format(
      "{:.1f} s of virtual time, {} events, {} packets ({} lost); READs re-sent {}, "
      "CLOCKs re-sent {}, NACKs {}",
      r.virtual_s, r.events, r.packets, r.lost, read_rtx, clock_rtx, nacks);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "serene-sim: simulates every Serene run of a scenario (default: the demo) in virtual\n"
      "time: N ranks and the real switch data plane exchange real packets over modelled\n"
      "links, the ranks train the real model on Fashion-MNIST (or only keep time with\n"
      "--timing-only), and a step takes the compute model's time plus the straggler\n"
      "pattern's, so results are free of this machine's noise and reproducible. Reports\n"
      "like serene-experiment (results.json/csv/md and accuracy.png in --out)."};
  std::string out, link = "latency=5us,gbps=10,loss=0", compute = "auto";
  std::string straggler_base = "compute", data_dir = st::DefaultDataDir();
  double jitter = 0.05, max_virtual_s = 7 * 24 * 3600.0;
  bool print_scenario = false, timing_only = false;
  serene::apps::ScenarioFlags flags(
      app,
      "Runs, comma-separated: serene:sync, serene:ssp:W, serene:async, "
      "serene:quorum:K:L, or a policy script (policies/adaptive.lua); Gloo runs are "
      "skipped");
  app.add_option("--link", link,
                 "Every rank's links: latency=DURATION,gbps=G,loss=P (default " + link + ")");
  app.add_option("--compute-ms", compute,
                 "Virtual time of one step's computation in ms, or auto: measured once on this "
                 "machine (the median of 15 real steps of the model)")
      ->capture_default_str();
  app.add_option("--jitter", jitter, "Each step takes compute × (1 ± jitter), uniform")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--straggler-base", straggler_base,
                 "What a slow_worker sleep is relative to: compute (the step's compute time, "
                 "as serene-train) or iteration (the iteration without waiting, as the paper)")
      ->capture_default_str()
      ->check(CLI::IsMember({"compute", "iteration"}));
  app.add_flag("--timing-only", timing_only,
               "No gradients and no evaluation: barrier and policy timing only");
  app.add_option("--max-virtual-s", max_virtual_s,
                 "A run fails if it has not ended after this much virtual time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--data-dir", data_dir, "Fashion-MNIST IDX directory")->capture_default_str();
  app.add_option("--out,-o", out, "Output directory (default: results/sim-<name>-<time>)");
  app.add_flag("--print-scenario", print_scenario, "Print the scenario as TOML and exit");
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

  auto scenario = flags.Build();
  if (!scenario.ok()) return Fail(scenario.status().message(), 2);
  // The simulator has no Gloo: its runs are left out (the first Serene run
  // becomes the baseline of the ratios).
  std::erase_if(scenario->runs,
                [](const ex::RunSpec& r) { return r.backend != ex::BackendKind::kSerene; });
  if (scenario->runs.empty()) return Fail("the scenario has no Serene run to simulate", 2);
  if (auto s = ex::ValidateScenario(*scenario); !s.ok()) return Fail(s.message(), 2);
  if (!scenario->switch_fault.empty()) {
    fmt::print(
        "note: switch_fault ({}) applies to real switches only; the simulator's links "
        "take --link loss=P\n",
        scenario->switch_fault);
  }
  if (print_scenario) {
    fmt::print("{}", ex::ScenarioToToml(*scenario));
    return 0;
  }

  sim::SimSettings settings;
  auto link_spec = sim::LinkSpec::Parse(link);
  if (!link_spec.ok()) return Fail("--link: " + link_spec.status().message(), 2);
  settings.link = *link_spec;
  settings.jitter = jitter;
  settings.straggler_base =
      straggler_base == "iteration" ? sim::StragglerBase::kIteration : sim::StragglerBase::kCompute;
  settings.timing_only = timing_only;
  settings.max_virtual_s = max_virtual_s;

  std::optional<st::Dataset> train, test;
  if (!timing_only || compute == "auto") {
    auto t = st::LoadFashionMnist(data_dir, st::Split::kTrain);
    if (!t.ok()) return Fail(t.status().message(), 1);
    train = std::move(*t);
  }
  if (!timing_only) {
    auto t = st::LoadFashionMnist(data_dir, st::Split::kTest);
    if (!t.ok()) return Fail(t.status().message(), 1);
    test = std::move(*t);
  }
  if (compute == "auto") {
    sim::TorchWorkOptions t;
    t.model = scenario->model;
    t.batch = static_cast<size_t>(scenario->batch);
    t.seed = scenario->seed;
    auto measured = sim::MeasureStepSeconds(t, *train);
    if (!measured.ok()) return Fail("measuring a step: " + measured.status().message(), 1);
    settings.compute_s = *measured;
    fmt::print(
        "compute model: {:.3f} ms per {} step, measured here (--compute-ms {:.3f} repeats it)\n",
        1e3 * settings.compute_s, st::ModelKindName(scenario->model), 1e3 * settings.compute_s);
  } else {
    double ms = 0;
    if (!serene::ParseDouble(compute, &ms) || ms <= 0) {
      return Fail("--compute-ms " + compute + ": expected a time in ms > 0, or auto", 2);
    }
    settings.compute_s = ms * 1e-3;
  }

  const std::string dir = out.empty() ? serene::apps::DefaultOutDir("sim-", *scenario) : out;
  if (auto s = ex::WriteTextFile(dir + "/scenario.toml", ex::ScenarioToToml(*scenario)); !s.ok()) {
    return Fail(s.message(), 1);
  }
  fmt::print(
      "serene-sim '{}': {} x {} ranks, straggler {} on ranks {} (relative to {}), target {}, "
      "budget {} steps; link {}; compute {:.3f} ms ± {:.0f}%{}\noutput: {}\n\n",
      scenario->name, scenario->workers, st::ModelKindName(scenario->model), scenario->straggler,
      scenario->straggler_ranks, straggler_base, scenario->target_accuracy, scenario->steps,
      settings.link.ToString(), 1e3 * settings.compute_s, 100 * jitter,
      timing_only ? "; timing only" : "", dir);
  std::fflush(stdout);

  sim::SimData data{train ? &*train : nullptr, test ? &*test : nullptr};
  std::vector<ex::RunSummary> summaries;
  std::string stats;
  for (size_t i = 0; i < scenario->runs.size(); ++i) {
    fmt::print("run {}/{}: {} ...\n", i + 1, scenario->runs.size(), scenario->runs[i].label);
    std::fflush(stdout);
    sim::SimRunResult r = sim::SimulateRun(*scenario, i, settings, data);
    if (r.summary.status.ok()) {
      const std::string line = SimStatsLine(r.sim);
      fmt::print("  JCT {:.2f} s, {} iterations (rank 0); {}\n", r.summary.jct_s,
                 r.summary.iterations_rank0, line);
      stats += r.summary.spec.label + ": " + line + "\n";
      for (const std::string& l : r.sim.controller_log) stats += "  " + l + "\n";
    } else {
      fmt::print("  failed: {}\n", r.summary.status.message());
    }
    std::fflush(stdout);
    summaries.push_back(std::move(r.summary));
  }
  ex::ComputeRatios(&summaries);
  fmt::print("\n{}\n", ex::FormatTable(summaries));
  if (auto s = ex::WriteReport(dir, *scenario, summaries); !s.ok()) return Fail(s.message(), 1);
  if (auto s = ex::WriteTextFile(dir + "/sim.txt", stats); !s.ok()) return Fail(s.message(), 1);
  auto png = timing_only ? serene::Result<std::string>(serene::Status::FailedPrecondition(
                               "no accuracy in a timing-only run"))
                         : ex::PlotAccuracy(dir, *scenario, summaries);
  fmt::print("results: {0}/results.md, {0}/results.csv, {0}/results.json, {0}/sim.txt\n", dir);
  fmt::print("plot: {}\n", png.ok() ? *png : "skipped: " + png.status().message());
  const bool all_ok = std::all_of(summaries.begin(), summaries.end(),
                                  [](const ex::RunSummary& r) { return r.status.ok(); });
  return all_ok ? 0 : 1;
}
