// Training through the real serene-switch process: the Serene backend learns,
// keeps ranks identical under SYNC, matches the Gloo baseline's curve for the
// same seeds, and ends the job for every rank at the target accuracy.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/switch_process.h"
#include "tests/train/test_data.h"
#include "train/model_layout.h"
#include "train/serene_backend.h"
#include "train/trainer.h"

namespace serene::train {
namespace {

using ::serene::testing::SwitchProcess;

TrainerOptions SmallRun() {
  TrainerOptions o;
  o.max_steps = 40;
  o.eval_every = 10;
  o.eval_samples = 1000;
  o.log_every = -1;
  o.eval_ranks = {0, 1};
  return o;
}

using testing::RankResult;

std::string Job(int world, const std::string& policy) {
  return "id=1,workers=" + std::to_string(world) +
         ",elements=" + std::to_string(ParameterCount(ModelKind::kMlp)) +
         ",key=0x7E57,policy=" + policy;
}

std::vector<RankResult> TrainWithSerene(const SwitchProcess& sw, int world,
                                        const TrainerOptions& options) {
  return testing::TrainRanks(world, options, [&](int rank) -> Result<std::unique_ptr<Backend>> {
    ClientOptions c;
    c.switch_address = sw.address();
    c.key = 0x7E57;
    c.rank = static_cast<uint32_t>(rank);
    c.world_size = static_cast<uint32_t>(world);
    auto b = SereneBackend::Connect(c, ParameterCount(options.model));
    if (!b.ok()) return b.status();
    return std::unique_ptr<Backend>(std::move(*b));
  });
}

TEST(SereneTrainer, TwoRanksLearnThroughTheSwitchAndStayIdentical) {
  SwitchProcess sw({"--job", Job(2, "sync")});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto r = TrainWithSerene(sw, 2, SmallRun());
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(r[rank].status.ok()) << r[rank].status.ToString();
    const RunMetrics& m = r[rank].metrics;
    EXPECT_EQ(m.backend, "serene");
    EXPECT_EQ(m.iterations, 40);
    ASSERT_EQ(m.timeline.size(), 5u);
    EXPECT_LT(m.timeline[4].train_loss, 0.8 * m.timeline[1].train_loss);
    EXPECT_LT(m.timeline[4].test_loss, 0.6 * m.timeline[0].test_loss);
    EXPECT_GT(m.final_accuracy, 0.5);
  }
  // SYNC reads are exact: both ranks evaluated the same model at every point.
  for (size_t i = 0; i < r[0].metrics.timeline.size(); ++i) {
    EXPECT_EQ(r[0].metrics.timeline[i].accuracy, r[1].metrics.timeline[i].accuracy) << i;
    EXPECT_EQ(r[0].metrics.timeline[i].test_loss, r[1].metrics.timeline[i].test_loss) << i;
  }
}

TEST(SereneTrainer, SyncFollowsTheGlooCurveForTheSameSeed) {
  TrainerOptions o = SmallRun();
  o.max_steps = 60;
  o.eval_every = 20;
  o.eval_ranks = {0};
  std::vector<RankResult> serene_run, gloo_run;
  {
    SwitchProcess sw({"--job", Job(2, "sync")});
    ASSERT_TRUE(sw.ok()) << sw.output();
    serene_run = TrainWithSerene(sw, 2, o);
  }
  testing::ScratchDir dir;
  gloo_run = testing::TrainRanks(2, o, testing::GlooRanks(2, dir.Sub("rdv")));
  ASSERT_TRUE(serene_run[0].status.ok()) << serene_run[0].status.ToString();
  ASSERT_TRUE(gloo_run[0].status.ok()) << gloo_run[0].status.ToString();
  const auto& a = serene_run[0].metrics.timeline;
  const auto& b = gloo_run[0].metrics.timeline;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    // Same data order, same initial weights; only the fixed-point rounding
    // (<= 2^-25 per value per step) differs.
    EXPECT_NEAR(a[i].accuracy, b[i].accuracy, 0.01) << "point " << i;
    EXPECT_NEAR(a[i].test_loss, b[i].test_loss, 0.01) << "point " << i;
  }
  double max_diff = 0;
  for (size_t i = 0; i < serene_run[0].model.size(); ++i) {
    max_diff = std::max(max_diff, double{std::abs(serene_run[0].model[i] - gloo_run[0].model[i])});
  }
  EXPECT_LT(max_diff, 1e-3) << "the models drifted apart";
}

TEST(SereneTrainer, TargetAccuracyEndsTheJobForEveryRank) {
  SwitchProcess sw({"--job", Job(3, "ssp:2")});
  ASSERT_TRUE(sw.ok()) << sw.output();
  TrainerOptions o = SmallRun();
  o.max_steps = 300;
  o.eval_every = 5;
  o.eval_ranks = {0};
  o.target_accuracy = 0.6;
  auto r = TrainWithSerene(sw, 3, o);
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(r[rank].status.ok()) << rank << ": " << r[rank].status.ToString();
  }
  EXPECT_EQ(r[0].metrics.stop_reason, StopReason::kTargetReached);
  EXPECT_GE(r[0].metrics.final_accuracy, 0.6);
  EXPECT_LT(r[0].metrics.iterations, 300);
  for (int rank = 1; rank < 3; ++rank) {
    EXPECT_EQ(r[rank].metrics.stop_reason, StopReason::kFinishedByPeer) << rank;
    // SSP(2): nobody got more than 2 clocks ahead of the others.
    EXPECT_LE(std::abs(r[rank].metrics.iterations - r[0].metrics.iterations), 3) << rank;
  }
}

TEST(SereneTrainer, AJobSizedForAnotherModelIsRefusedWithBothSizes) {
  SwitchProcess sw({"--job", "id=1,workers=1,elements=1000,key=0x7E57"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  ClientOptions c;
  c.switch_address = sw.address();
  c.key = 0x7E57;
  auto b = SereneBackend::Connect(c, ParameterCount(ModelKind::kMlp));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("has 1000 elements but the model has 79510"),
            std::string::npos)
      << b.status().message();
}

}  // namespace
}  // namespace serene::train
