// Training in the simulator: the real math on the real data. Under SYNC it
// trains exactly the model real ranks train through the real serene-switch
// (same seed, same data order, same fixed point), whatever the links lose.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulation.h"
#include "sim/torch_work.h"
#include "testing/switch_process.h"
#include "tests/train/test_data.h"
#include "train/model_layout.h"
#include "train/serene_backend.h"
#include "train/trainer.h"

namespace serene::sim {
namespace {

using train::testing::TestSet;
using train::testing::TrainSet;

constexpr int kRanks = 2;
constexpr int64_t kSteps = 30;
constexpr int64_t kEvalEvery = 10;
constexpr size_t kEvalSamples = 1000;

SimulationResult Simulate(double loss, const std::string& policy = "sync", double momentum = 0,
                          double eval_s = 0) {
  TorchWorkOptions t;
  t.workers = kRanks;
  t.momentum = momentum;
  t.eval_samples = kEvalSamples;
  auto work = TorchWork::Create(t, TrainSet(), TestSet());
  EXPECT_TRUE(work.ok()) << work.status().message();
  SimulationOptions o;
  o.workers = kRanks;
  o.row_width = 256;
  o.policy = policy;
  o.max_steps = kSteps;
  o.eval_every = kEvalEvery;
  o.link.loss = loss;
  o.compute.eval_s = eval_s;
  auto r = RunSimulation(o, **work);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : SimulationResult();
}

TEST(TrainingSimTest, SimulatedRanksLearn) {
  const SimulationResult r = Simulate(0);
  ASSERT_EQ(r.ranks.size(), 2u);
  const train::RunMetrics& m = r.ranks[0];
  EXPECT_TRUE(m.evaluates);
  EXPECT_EQ(m.iterations, kSteps);
  ASSERT_EQ(m.timeline.size(), 4u);  // steps 0, 10, 20, 30
  EXPECT_LT(m.timeline[3].test_loss, 0.6 * m.timeline[0].test_loss);
  EXPECT_GT(m.final_accuracy, 0.5);
  EXPECT_LT(m.timeline[3].train_loss, m.timeline[1].train_loss);
}

TEST(TrainingSimTest, SyncTrainsTheSameModelWhateverTheLinksLose) {
  const SimulationResult clean = Simulate(0), lossy = Simulate(0.03);
  EXPECT_GT(lossy.lost, 0u);
  const auto& a = clean.ranks[0].timeline;
  const auto& b = lossy.ranks[0].timeline;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].accuracy, b[i].accuracy) << "point " << i;
    EXPECT_EQ(a[i].test_loss, b[i].test_loss) << "point " << i;
  }
}

// With momentum 0 and 0.9: the simulator's update rule is serene-train's
// (train/momentum.h), velocity and all.
class SyncMatchesRealRanks : public ::testing::TestWithParam<double> {};

TEST_P(SyncMatchesRealRanks, ThroughTheRealSwitch) {
  const double momentum = GetParam();
  const SimulationResult simulated = Simulate(0, "sync", momentum);

  testing::SwitchProcess sw(
      {"--job",
       "id=1,workers=2,elements=" + std::to_string(train::ParameterCount(train::ModelKind::kMlp)) +
           ",row=256,key=0x7E57,policy=sync"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  train::TrainerOptions o;
  o.max_steps = kSteps;
  o.eval_every = kEvalEvery;
  o.eval_samples = kEvalSamples;
  o.log_every = -1;
  o.momentum = momentum;
  auto real = train::testing::TrainRanks(
      kRanks, o, [&](int rank) -> Result<std::unique_ptr<train::Backend>> {
        ClientOptions c;
        c.switch_address = sw.address();
        c.key = 0x7E57;
        c.rank = static_cast<uint32_t>(rank);
        c.world_size = kRanks;
        auto b = train::SereneBackend::Connect(c, train::ParameterCount(train::ModelKind::kMlp));
        if (!b.ok()) return b.status();
        return std::unique_ptr<train::Backend>(std::move(*b));
      });
  ASSERT_TRUE(real[0].status.ok()) << real[0].status.ToString();
  const auto& a = simulated.ranks[0].timeline;
  const auto& b = real[0].metrics.timeline;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].accuracy, b[i].accuracy) << "point " << i;
    EXPECT_EQ(a[i].test_loss, b[i].test_loss) << "point " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(TrainingSimTest, SyncMatchesRealRanks, ::testing::Values(0.0, 0.9));

// An evaluation takes eval_s on rank 0, before its step (as in
// train/trainer.cc); under SYNC the other rank waits for it at the next
// barrier. Steps 0, 10 and 20 evaluate mid-run and step 30, the step limit,
// before rank 0 stops: rank 0's job ends 4 evaluations later, rank 1's 3,
// and the model trained is the same.
TEST(TrainingSimTest, EvaluationTimeHoldsEveryRankUnderSync) {
  constexpr double kEval = 0.05;
  const SimulationResult free = Simulate(0), timed = Simulate(0, "sync", 0, kEval);
  ASSERT_EQ(free.ranks.size(), timed.ranks.size());
  for (size_t r = 0; r < free.ranks.size(); ++r) {
    // Less by at most the other rank's lead at each barrier: the steps'
    // jitter, ± jitter × compute on each rank.
    const double evals = r == 0 ? 4 : 3;
    const ComputeModel c;
    const double later = timed.ranks[r].job_completion_s - free.ranks[r].job_completion_s;
    EXPECT_LE(later, evals * kEval + 1e-6) << "rank " << r;
    EXPECT_GE(later, evals * (kEval - 2 * c.jitter * c.compute_s)) << "rank " << r;
    EXPECT_EQ(timed.ranks[r].iterations, free.ranks[r].iterations);
  }
  EXPECT_NEAR(timed.ranks[0].eval_s, 4 * kEval, 1e-12);
  EXPECT_EQ(timed.ranks[1].eval_s, 0);
  EXPECT_EQ(timed.ranks[0].timeline.back().test_loss, free.ranks[0].timeline.back().test_loss);
}

// Momentum changes what is trained: the same seed without it gives another
// model after a few steps (else the parameter would be ignored somewhere).
TEST(TrainingSimTest, MomentumChangesTheModelTrained) {
  const SimulationResult plain = Simulate(0), heavy = Simulate(0, "sync", 0.9);
  ASSERT_EQ(plain.ranks[0].timeline.size(), heavy.ranks[0].timeline.size());
  EXPECT_NE(plain.ranks[0].timeline.back().test_loss, heavy.ranks[0].timeline.back().test_loss);
}

}  // namespace
}  // namespace serene::sim
