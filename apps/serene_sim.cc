// serene-sim: runs a scenario of serene-experiment (the embedded demo, or a
// TOML file) in the virtual-time simulator — the real data plane and, unless
// --timing-only, the real training math, with time from a compute model and a
// link model instead of this machine's clock — and reports the runs side by
// side like serene-experiment. Wiring only: flags -> Scenario + SimSettings
// -> SimulateRun per run -> report files and plot. See docs/simulator.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli_parse.h"
#include "apps/scenario_flags.h"
#include "common/duration.h"
#include "common/sigpipe.h"
#include "experiment/plot.h"
#include "experiment/report.h"
#include "experiment/scenario.h"
#include "sim/math_kernels.h"
#include "sim/seed_summary.h"
#include "sim/sim_runner.h"
#include "sim/sim_settings.h"
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
  uint64_t read_rtx = 0, clock_rtx = 0, nacks = 0, rejoins = 0;
  for (const sim::RankCounters& c : r.counters) {
    read_rtx += c.read_retransmits;
    clock_rtx += c.clock_retransmits;
    nacks += c.nacks;
    rejoins += c.rejoins;
  }
  return fmt::format(
      "{:.1f} s of virtual time, {} events, {} packets ({} lost); READs re-sent {}, "
      "CLOCKs re-sent {}, NACKs {}; evictions {}, rejoins {}",
      r.virtual_s, r.events, r.packets, r.lost, read_rtx, clock_rtx, nacks, r.evictions, rejoins);
}

}  // namespace

int main(int argc, char** argv) {
  serene::IgnoreSigpipe();  // a closed output pipe must not end it mid-sweep
  // Before anything loads a kernel: the same training math on every AVX2 CPU.
  const std::string kernel_note = sim::PinMathKernels(argv);
  CLI::App app{
      "serene-sim: simulates every Serene run of a scenario (default: the demo) in virtual\n"
      "time: N ranks and the real switch data plane exchange real packets over modelled\n"
      "links, the ranks train the real model on Fashion-MNIST (or only keep time with\n"
      "--timing-only), and a step takes the compute model's time plus the straggler\n"
      "pattern's, so results are free of this machine's noise and reproducible. Reports\n"
      "like serene-experiment (results.json/csv/md and accuracy.png in --out)."};
  std::string out, data_dir = st::DefaultDataDir();
  bool print_scenario = false;
  serene::apps::ScenarioFlags flags(
      app,
      "Runs, comma-separated: serene:sync, serene:ssp:W, serene:async, serene:quorum:K:L, or a "
      "policy script (policies/adaptive.lua); Gloo runs are skipped");
  // Flags of the scenario's [sim] keys (sim/sim_settings.h): {flag, key, help}.
  const std::vector<std::array<std::string, 3>> sim_flags = {
      {"--link", "link",
       "Every rank's links: latency=DURATION,gbps=G,loss=P (default latency=5us,gbps=10,loss=0)"},
      {"--switch-us", "switch_us",
       "The switch's time per packet in µs, one packet after another; 0 = when it arrives, as a "
       "hardware pipeline at line rate (default 0)"},
      {"--compute-ms", "compute_ms",
       "Virtual time of one step's computation in ms, or auto: measured once on this machine "
       "(the median of 15 real steps of the model) (default auto)"},
      {"--jitter", "jitter", "Each step takes compute × (1 ± jitter), uniform (default 0.05)"},
      {"--eval-ms", "eval_ms",
       "Virtual time of one evaluation of the test set on rank 0, in ms; under SYNC every rank "
       "waits for it (default 0)"},
      {"--straggler-base", "straggler_base",
       "What a slow_worker sleep is relative to: compute (the step's compute time, as "
       "serene-train), iteration (the iteration without waiting, as the paper) or "
       "wall_iteration (the whole iteration, waiting included) (default compute)"},
      {"--seeds", "seeds",
       "Simulate every run once per seed, e.g. 1,2,3, and summarize mean ± sd (default: the "
       "scenario's seed)"},
      {"--evict-after-s", "evict_after_s",
       "The switch evicts a rank silent this many virtual seconds; it JOINs again when it wakes "
       "(default 10, as serene-switch; 0 = never)"},
      {"--max-virtual-s", "max_virtual_s",
       "A run fails if it has not ended after this much virtual time (default 604800)"}};
  std::vector<std::string> sim_values(sim_flags.size());
  std::vector<CLI::Option*> sim_options;
  for (size_t i = 0; i < sim_flags.size(); ++i) {
    sim_options.push_back(app.add_option(sim_flags[i][0], sim_values[i], sim_flags[i][2]));
  }
  bool timing_only = false;
  app.add_flag("--timing-only", timing_only,
               "No gradients and no evaluation: barrier and policy timing only");
  app.add_option("--data-dir", data_dir, "Fashion-MNIST IDX directory")->capture_default_str();
  app.add_option("--out,-o", out, "Output directory (default: results/sim-<name>-<time>)");
  app.add_flag("--print-scenario", print_scenario,
               "Print the scenario (with its [sim] table) as TOML and exit");
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
  // The [sim] table, then the flags given, key by key (kept in the table, so
  // scenario.toml in the output repeats the run).
  auto settings = sim::SimSettingsFromTable(scenario->sim, "the scenario");
  if (!settings.ok()) return Fail(settings.status().message(), 2);
  auto set = [&](const std::string& key, const std::string& value, const std::string& flag) {
    scenario->sim[key] = value;
    return sim::SetSimSetting(key, value, flag, &*settings);
  };
  for (size_t i = 0; i < sim_flags.size(); ++i) {
    if (sim_options[i]->count() == 0) continue;
    if (auto st = set(sim_flags[i][1], sim_values[i], sim_flags[i][0]); !st.ok()) {
      return Fail(st.message(), 2);
    }
  }
  if (timing_only) (void)set("timing_only", "true", "--timing-only");  // cannot fail
  if (print_scenario) {
    fmt::print("{}", ex::ScenarioToToml(*scenario));
    return 0;
  }

  if (!kernel_note.empty()) fmt::print("note: {}\n", kernel_note);
  std::optional<st::Dataset> train, test;
  if (!settings->timing_only || !settings->compute_s) {
    auto t = st::LoadFashionMnist(data_dir, st::Split::kTrain);
    if (!t.ok()) return Fail(t.status().message(), 1);
    train = std::move(*t);
  }
  if (!settings->timing_only) {
    auto t = st::LoadFashionMnist(data_dir, st::Split::kTest);
    if (!t.ok()) return Fail(t.status().message(), 1);
    test = std::move(*t);
  }
  if (!settings->compute_s) {
    sim::TorchWorkOptions t;
    t.model = scenario->model;
    t.batch = static_cast<size_t>(scenario->batch);
    t.seed = scenario->seed;
    auto measured = sim::MeasureStepSeconds(t, *train);
    if (!measured.ok()) return Fail("measuring a step: " + measured.status().message(), 1);
    settings->compute_s = *measured;
    scenario->sim["compute_ms"] = fmt::format("{:.3f}", 1e3 * *measured);
    fmt::print("compute model: {} ms per {} step, measured here (--compute-ms {} repeats it)\n",
               scenario->sim["compute_ms"], st::ModelKindName(scenario->model),
               scenario->sim["compute_ms"]);
  }
  std::vector<uint64_t> seeds = settings->seeds;
  if (seeds.empty()) seeds.push_back(scenario->seed);

  const std::string dir = out.empty() ? serene::apps::DefaultOutDir("sim-", *scenario) : out;
  if (auto s = ex::WriteTextFile(dir + "/scenario.toml", ex::ScenarioToToml(*scenario)); !s.ok()) {
    return Fail(s.message(), 1);
  }
  fmt::print(
      "serene-sim '{}': {} x {} ranks, straggler {} on ranks {} (relative to {}), target {}, "
      "budget {} steps; link {}{}; compute {:.3f} ms ± {:.0f}%{}{}; seeds {}; math kernels {}\n"
      "output: {}\n\n",
      scenario->name, scenario->workers, st::ModelKindName(scenario->model), scenario->straggler,
      scenario->straggler_ranks, sim::StragglerBaseName(settings->straggler_base),
      scenario->target_accuracy, scenario->steps, settings->link.ToString(),
      settings->switch_service_s > 0
          ? fmt::format("; switch {:.1f} us per packet", 1e6 * settings->switch_service_s)
          : "",
      1e3 * *settings->compute_s, 100 * settings->jitter,
      settings->eval_s > 0 ? fmt::format(", evaluation {:.1f} ms", 1e3 * settings->eval_s) : "",
      settings->timing_only ? "; timing only" : "", fmt::join(seeds, ","), sim::MathKernels(),
      dir);
  std::fflush(stdout);

  sim::SimData data{train ? &*train : nullptr, test ? &*test : nullptr};
  std::vector<std::vector<ex::RunSummary>> by_seed;
  bool all_ok = true;
  for (uint64_t seed : seeds) {
    ex::Scenario seeded = *scenario;
    seeded.seed = seed;
    const std::string seed_dir = seeds.size() > 1 ? fmt::format("{}/seed-{}", dir, seed) : dir;
    if (seeds.size() > 1) fmt::print("=== seed {} ===\n", seed);
    std::vector<ex::RunSummary> summaries;
    std::string stats;
    for (size_t i = 0; i < seeded.runs.size(); ++i) {
      fmt::print("run {}/{}: {} ...\n", i + 1, seeded.runs.size(), seeded.runs[i].label);
      std::fflush(stdout);
      sim::SimRunResult r = sim::SimulateRun(seeded, i, *settings, data);
      if (r.summary.status.ok()) {
        const std::string line = SimStatsLine(r.sim);
        fmt::print("  JCT {:.2f} s, {} iterations (rank 0); {}\n", r.summary.jct_s,
                   r.summary.iterations_rank0, line);
        stats += r.summary.spec.label + ": " + line + "\n";
        for (const std::string& l : r.sim.controller_log) stats += "  " + l + "\n";
      } else {
        fmt::print("  failed: {}\n", r.summary.status.message());
        all_ok = false;
      }
      std::fflush(stdout);
      summaries.push_back(std::move(r.summary));
    }
    ex::ComputeRatios(&summaries);
    fmt::print("\n{}\n", ex::FormatTable(summaries));
    if (auto s = ex::WriteReport(seed_dir, seeded, summaries); !s.ok()) return Fail(s.message(), 1);
    if (auto s = ex::WriteTextFile(seed_dir + "/sim.txt", stats); !s.ok()) {
      return Fail(s.message(), 1);
    }
    auto png = settings->timing_only
                   ? serene::Result<std::string>(
                         serene::Status::FailedPrecondition("no accuracy in a timing-only run"))
                   : ex::PlotAccuracy(seed_dir, seeded, summaries);
    fmt::print("results: {0}/results.md, {0}/results.csv, {0}/results.json, {0}/sim.txt\n",
               seed_dir);
    fmt::print("plot: {}\n\n", png.ok() ? *png : "skipped: " + png.status().message());
    by_seed.push_back(std::move(summaries));
  }
  if (seeds.size() > 1) {
    const std::vector<sim::SeedRow> rows = sim::SummarizeSeeds(by_seed);
    fmt::print("over {} seeds (mean ± sd; % of the first run of the same seed):\n{}\n",
               seeds.size(), sim::SeedTable(rows));
    const std::string title =
        fmt::format("{}: {} x {} ranks, {} seeds", scenario->name, scenario->workers,
                    st::ModelKindName(scenario->model), seeds.size());
    auto png = sim::WriteSeedSummary(dir, title, rows);
    if (!png.ok() && png.status().code() == serene::Status::Code::kIoError) {
      return Fail(png.status().message(), 1);
    }
    fmt::print("summary: {0}/summary.md, {0}/summary.csv, {0}/summary.json; plot: {1}\n", dir,
               png.ok() ? *png : "skipped: " + png.status().message());
  }
  return all_ok ? 0 : 1;
}
