// SimRunner: a scenario of serene-experiment (experiment/scenario.h) run in
// the simulator — each Serene run becomes one Simulation with the scenario's
// job (ranks, model, steps, target, stragglers, hyperparameters, row width)
// and the run's policy or policy script, and comes back as the same
// experiment::RunSummary a real run gives, so the report, ratios and plots
// are serene-experiment's (docs/simulator.md).
//
// What only the simulator has (links, the compute model, timing-only mode)
// is SimSettings (sim_settings.h). Gloo runs have no switch to simulate and
// are refused.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "experiment/report.h"
#include "experiment/scenario.h"
#include "sim/sim_settings.h"
#include "sim/simulation.h"
#include "train/fashion_mnist.h"

namespace serene::sim {

// The data the training math needs (unused when timing only).
struct SimData {
  const train::Dataset* train = nullptr;
  const train::Dataset* test = nullptr;
};

struct SimRunResult {
  experiment::RunSummary summary;
  SimulationResult sim;  // empty when the run failed
};

// The simulation options of scenario run `index`. Errors: InvalidArgument for a
// Gloo run, for settings without a compute time (measure it first) and for
// what the scenario's checks missed.
Result<SimulationOptions> OptionsForRun(const experiment::Scenario& scenario, size_t index,
                                        const SimSettings& settings);

// Simulates run `index` of the scenario; never fails as a whole: a failed run
// is a FailedRun summary saying why. REQUIRES: ValidateScenario(scenario).ok().
SimRunResult SimulateRun(const experiment::Scenario& scenario, size_t index,
                         const SimSettings& settings, const SimData& data);

}  // namespace serene::sim
