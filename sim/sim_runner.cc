#include "sim/sim_runner.h"

#include <memory>

#include "sim/torch_work.h"
#include "train/model_layout.h"

namespace serene::sim {

Result<SimulationOptions> OptionsForRun(const experiment::Scenario& s, size_t index,
                                        const SimSettings& settings) {
  const experiment::RunSpec& run = s.runs.at(index);
  if (run.backend != experiment::BackendKind::kSerene) {
    return Status::InvalidArgument("run '" + run.label +
                                   "' is a Gloo run: the simulator models the Serene switch only");
  }
  if (!settings.compute_s || !(*settings.compute_s > 0)) {
    return Status::InvalidArgument("the compute model needs a time per step > 0 s");
  }
  SimulationOptions o;
  o.workers = s.workers;
  o.row_width = s.row;
  if (experiment::IsPolicyScript(run.policy)) {
    auto path = experiment::ResolvePolicyScript(run.policy);
    if (!path.ok()) return path.status();
    o.policy = *path;
  } else {
    o.policy = run.policy;
  }
  o.params = run.params;
  o.control_period_s = s.control_period_ms * 1e-3;
  o.link = settings.link;
  o.switch_service_s = settings.switch_service_s;
  o.compute = {*settings.compute_s, settings.jitter, settings.eval_s, s.compute_floor_ms * 1e-3};
  if (s.straggler != "none") {
    auto spec = train::ParseStragglerSpec(s.straggler);
    if (!spec.ok()) return spec.status();
    auto ranks = train::ParseRankList(s.straggler_ranks, s.workers);
    if (!ranks.ok()) return ranks.status();
    o.straggler = *spec;
    o.straggler_ranks = *ranks;
  }
  o.straggler_base = settings.straggler_base;
  o.max_steps = s.steps;
  o.target_accuracy = settings.timing_only ? 0 : s.target_accuracy;
  o.eval_every = s.eval_every;
  o.seed = s.seed;
  o.max_virtual_s = settings.max_virtual_s;
  o.evict_after_s = settings.evict_after_s;
  return o;
}

SimRunResult SimulateRun(const experiment::Scenario& s, size_t index, const SimSettings& settings,
                         const SimData& data) {
  const experiment::RunSpec& spec = s.runs.at(index);
  SimRunResult out;
  auto fail = [&](Status why) {
    out.summary = experiment::FailedRun(spec, std::move(why));
    return out;
  };
  auto options = OptionsForRun(s, index, settings);
  if (!options.ok()) return fail(options.status());

  std::unique_ptr<RankWork> work;
  if (settings.timing_only) {
    work = std::make_unique<TimingWork>(train::ParameterCount(s.model));
  } else {
    if (data.train == nullptr || data.test == nullptr) {
      return fail(Status::InvalidArgument("training needs the Fashion-MNIST data"));
    }
    TorchWorkOptions t;
    t.model = s.model;
    t.workers = s.workers;
    t.batch = static_cast<size_t>(s.batch);
    t.learning_rate = s.learning_rate;
    t.momentum = s.momentum;
    t.seed = s.seed;
    t.scale_log2 = 24;
    t.eval_samples = static_cast<size_t>(s.eval_samples);
    auto w = TorchWork::Create(t, *data.train, *data.test);
    if (!w.ok()) return fail(w.status());
    work = std::move(*w);
  }

  auto sim = RunSimulation(*options, *work);
  if (!sim.ok()) return fail(sim.status());
  for (train::RunMetrics& m : sim->ranks) {
    m.model = std::string(train::ModelKindName(s.model));
    m.learning_rate = s.learning_rate;
    m.batch_size = static_cast<size_t>(s.batch);
    m.eval_samples = m.evaluates ? static_cast<size_t>(s.eval_samples) : 0;
  }
  auto summary = experiment::Summarize(spec, sim->ranks);
  if (!summary.ok()) return fail(summary.status());
  out.summary = std::move(*summary);
  for (const AppliedRule& a : sim->changes) {
    experiment::PolicyChange c;
    c.seconds = a.seconds;
    c.high = a.high;
    c.effective_clock = a.effective_clock;
    c.rule = a.rule;
    c.epoch = a.epoch;
    out.summary.policy_changes.push_back(c);
  }
  out.sim = std::move(*sim);
  return out;
}

}  // namespace serene::sim
