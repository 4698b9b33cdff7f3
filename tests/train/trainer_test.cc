#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

using testing::ScratchDir;

TrainerOptions SmallRun() {
  TrainerOptions o;
  o.max_steps = 40;
  o.eval_every = 10;
  o.eval_samples = 1000;
  o.log_every = -1;
  return o;
}

using testing::RankResult;

// Trains `world` ranks on threads, each with its own Gloo context over TCP on
// loopback, like separate processes would.
std::vector<RankResult> TrainWithGloo(
    int world, const TrainerOptions& options,
    collective::GlooAlgorithm algorithm = collective::GlooAlgorithm::kDefault) {
  ScratchDir dir;
  return testing::TrainRanks(world, options, testing::GlooRanks(world, dir.Sub("rdv"), algorithm));
}

bool BitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(TrainerGlooTest, TwoRanksLearnAndStayBitIdentical) {
  TrainerOptions o = SmallRun();
  o.eval_ranks = {0, 1};
  std::vector<RankResult> r = TrainWithGloo(2, o);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(r[rank].status.ok()) << r[rank].status.ToString();
    const RunMetrics& m = r[rank].metrics;
    EXPECT_EQ(m.stop_reason, StopReason::kStepLimit);
    EXPECT_EQ(m.iterations, 40);
    EXPECT_EQ(m.parameters, 79510u);
    ASSERT_EQ(m.timeline.size(), 5u);  // steps 0, 10, 20, 30, 40
    EXPECT_EQ(m.timeline.back().step, 40);
    // Training loss of steps 1-10 vs 31-40, and test loss before vs after.
    EXPECT_LT(m.timeline[4].train_loss, 0.8 * m.timeline[1].train_loss);
    EXPECT_LT(m.timeline[4].test_loss, 0.6 * m.timeline[0].test_loss);
    EXPECT_GT(m.final_accuracy, 0.5);
    EXPECT_EQ(m.final_accuracy, m.timeline.back().accuracy);
    EXPECT_GT(m.compute_s, 0.0);
  }
  EXPECT_TRUE(BitIdentical(r[0].model, r[1].model));
  EXPECT_FALSE(BitIdentical(r[0].model, InitialParameters(ModelKind::kMlp, o.seed)));
  // Same model, same test subset: the same accuracy to the last bit.
  EXPECT_EQ(r[0].metrics.final_accuracy, r[1].metrics.final_accuracy);
  // The ranks trained on different data: their training losses differ.
  EXPECT_NE(r[0].metrics.timeline[1].train_loss, r[1].metrics.timeline[1].train_loss);
}

TEST(TrainerGlooTest, SameSeedReproducesTheRunBitForBit) {
  TrainerOptions o = SmallRun();
  o.max_steps = 8;
  o.eval_ranks = {};
  o.straggler = *ParseStragglerSpec("heterogeneous:1.5");
  o.straggler_ranks = {1};
  std::vector<RankResult> a = TrainWithGloo(2, o);
  std::vector<RankResult> b = TrainWithGloo(2, o);
  ASSERT_TRUE(a[0].status.ok() && a[1].status.ok() && b[0].status.ok() && b[1].status.ok());
  EXPECT_TRUE(BitIdentical(a[0].model, b[0].model));
  EXPECT_TRUE(BitIdentical(a[0].model, a[1].model));
  EXPECT_EQ(a[1].metrics.straggler, "heterogeneous:1.5");
  EXPECT_EQ(a[1].metrics.slowed_iterations, 8);
  EXPECT_GT(a[1].metrics.straggler_sleep_s, 0.0);
  EXPECT_EQ(a[0].metrics.straggler, "none");
  EXPECT_EQ(a[0].metrics.slowed_iterations, 0);
  o.seed = 2;
  std::vector<RankResult> c = TrainWithGloo(2, o);
  ASSERT_TRUE(c[0].status.ok());
  EXPECT_FALSE(BitIdentical(a[0].model, c[0].model));
}

// Halving-doubling (the fast algorithm of the experiments' Gloo baseline),
// with three ranks (not a power of two) and a straggler: every rank holds the
// same bits at the end, and the run learns as the default allreduce's does
// (the sums differ only in rounding order).
TEST(TrainerGlooTest, HalvingDoublingKeepsThreeRanksBitIdentical) {
  TrainerOptions o = SmallRun();
  o.eval_ranks = {0, 1, 2};
  o.straggler = *ParseStragglerSpec("heterogeneous:1.5");
  o.straggler_ranks = {2};
  std::vector<RankResult> hd = TrainWithGloo(3, o, collective::GlooAlgorithm::kHalvingDoubling);
  std::vector<RankResult> ring = TrainWithGloo(3, o);
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(hd[rank].status.ok()) << hd[rank].status.ToString();
    ASSERT_TRUE(ring[rank].status.ok()) << ring[rank].status.ToString();
    EXPECT_EQ(hd[rank].metrics.iterations, 40);
    EXPECT_TRUE(BitIdentical(hd[rank].model, hd[0].model));
    EXPECT_TRUE(BitIdentical(ring[rank].model, ring[0].model));
    EXPECT_EQ(hd[rank].metrics.final_test_loss, hd[0].metrics.final_test_loss);
  }
  EXPECT_FALSE(BitIdentical(hd[0].model, InitialParameters(ModelKind::kMlp, o.seed)));
  EXPECT_GT(hd[0].metrics.final_accuracy, 0.5);
  EXPECT_NEAR(hd[0].metrics.final_accuracy, ring[0].metrics.final_accuracy, 0.02);
  EXPECT_NEAR(hd[0].metrics.final_test_loss, ring[0].metrics.final_test_loss, 0.02);
}

TEST(TrainerGlooTest, TargetAccuracyEndsTheJobForEveryRank) {
  TrainerOptions o = SmallRun();
  o.max_steps = 300;
  o.eval_every = 5;
  o.target_accuracy = 0.6;
  std::vector<RankResult> r = TrainWithGloo(2, o);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_TRUE(r[1].status.ok()) << r[1].status.ToString();
  const RunMetrics& m0 = r[0].metrics;
  const RunMetrics& m1 = r[1].metrics;
  EXPECT_EQ(m0.stop_reason, StopReason::kTargetReached);
  EXPECT_EQ(m1.stop_reason, StopReason::kFinishedByPeer);
  EXPECT_LT(m0.iterations, 300);
  EXPECT_EQ(m0.iterations % 5, 0);
  EXPECT_EQ(m0.iterations, m1.iterations);
  EXPECT_GE(m0.final_accuracy, 0.6);
  EXPECT_TRUE(std::isfinite(m0.target_reached_s));
  EXPECT_FALSE(m1.evaluates);
  EXPECT_TRUE(std::isnan(m1.final_accuracy));
  // Rank 1 dropped the round in which it learned of the end: both hold the
  // model rank 0 evaluated.
  EXPECT_TRUE(BitIdentical(r[0].model, r[1].model));
}

TEST(TrainerGlooTest, TimeLimitStopsEveryRank) {
  TrainerOptions o = SmallRun();
  o.max_steps = 0;
  o.time_limit_s = 2.0;
  std::vector<RankResult> r = TrainWithGloo(2, o);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_TRUE(r[1].status.ok()) << r[1].status.ToString();
  for (const RankResult& x : r) {
    EXPECT_TRUE(x.metrics.stop_reason == StopReason::kTimeLimit ||
                x.metrics.stop_reason == StopReason::kFinishedByPeer);
  }
  EXPECT_EQ(r[0].metrics.iterations, r[1].metrics.iterations);
  EXPECT_TRUE(BitIdentical(r[0].model, r[1].model));
  EXPECT_TRUE(std::isfinite(r[0].metrics.final_accuracy));  // final evaluation
}

// A backend that records the loop's calls; it plays a world of 2 in which the
// other rank pushes the same update, so the model moves by 2 * update.
class RecordingBackend : public Backend {
 public:
  std::string_view name() const override { return "recording"; }
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  Status Initialize(std::span<float> model) override {
    ++initialize_calls;
    initial.assign(model.begin(), model.end());
    return Status::Ok();
  }
  Status Pull(std::span<float>, SyncTiming* timing) override {
    EXPECT_FALSE(finish_called) << "Pull after Finish";
    ++pulls;
    timing->barrier_wait_s = 0.25;
    return Status::Ok();
  }
  Status Push(std::span<const float> update, std::span<float> model, SyncTiming*) override {
    EXPECT_FALSE(finish_called) << "Push after Finish";
    if (pushes++ == 0) first_update.assign(update.begin(), update.end());
    for (size_t i = 0; i < model.size(); ++i) model[i] += 2 * update[i];
    return Status::Ok();
  }
  bool Finished() override { return false; }
  Status Finish() override {
    EXPECT_FALSE(finish_called) << "Finish twice";
    finish_called = true;
    return Status::Ok();
  }

  int initialize_calls = 0;
  int pulls = 0;
  int pushes = 0;
  bool finish_called = false;
  std::vector<float> initial;
  std::vector<float> first_update;
};

TEST(TrainerTest, PushesMinusLrOverNTimesTheGradient) {
  RecordingBackend backend;
  TrainerOptions o = SmallRun();
  o.max_steps = 3;
  o.learning_rate = 0.05;
  o.batch_size = 32;
  o.seed = 17;
  auto trainer = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Result<RunMetrics> m = (*trainer)->Run();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(backend.initialize_calls, 1);
  EXPECT_EQ(backend.pushes, 3);
  EXPECT_EQ(backend.pulls, 4);  // the last Pull precedes the final evaluation
  EXPECT_FALSE(backend.finish_called);
  EXPECT_EQ(backend.initial, InitialParameters(ModelKind::kMlp, 17));
  EXPECT_DOUBLE_EQ(m->barrier_wait_s, 1.0);
  EXPECT_EQ(m->backend, "recording");

  // Recompute rank 0's first batch and gradient independently.
  auto batcher = ShardedBatcher::Create(testing::TrainSet(), {0, 2, 32, 17});
  ASSERT_TRUE(batcher.ok());
  Batch batch;
  (*batcher)->Next(&batch);
  auto net = Network::Create(ModelKind::kMlp);
  ASSERT_TRUE(net.ok());
  std::vector<float> grad(backend.initial.size());
  ASSERT_TRUE((*net)->Gradient(backend.initial, batch, grad).ok());
  ASSERT_EQ(backend.first_update.size(), grad.size());
  const float scale = static_cast<float>(-0.05 / 2);
  for (size_t i = 0; i < grad.size(); ++i) ASSERT_EQ(backend.first_update[i], scale * grad[i]) << i;
}

// Each evaluation before a step is reported as a pause of that length (what
// serene-train sends to the switch's runtime API); the one at the step limit
// is not: no step follows it.
TEST(TrainerTest, ReportsEachEvaluationBeforeAStepAsAPause) {
  RecordingBackend backend;
  TrainerOptions o = SmallRun();
  o.max_steps = 25;
  o.eval_every = 10;
  o.batch_size = 32;
  std::vector<double> pauses;
  o.report_pause = [&pauses](double seconds) { pauses.push_back(seconds); };
  auto trainer = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Result<RunMetrics> m = (*trainer)->Run();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(pauses.size(), 3u) << "steps 0, 10 and 20; not the final evaluation at 25";
  double sum = 0;
  for (double p : pauses) {
    EXPECT_GT(p, 0);
    sum += p;
  }
  EXPECT_LT(sum, m->eval_s) << "the final evaluation is in eval_s, not reported";
}

TEST(TrainerTest, TargetReachedCallsFinishOnceAndStops) {
  RecordingBackend backend;
  TrainerOptions o = SmallRun();
  o.max_steps = 100;
  o.eval_every = 1;
  o.target_accuracy = 0.01;  // the initial model already beats it
  auto trainer = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
  ASSERT_TRUE(trainer.ok());
  Result<RunMetrics> m = (*trainer)->Run();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->stop_reason, StopReason::kTargetReached);
  EXPECT_EQ(m->iterations, 0);
  EXPECT_TRUE(backend.finish_called);
  EXPECT_EQ(backend.pushes, 0);
}

TEST(TrainerTest, RejectsInconsistentOptions) {
  RecordingBackend backend;
  const Dataset& train = testing::TrainSet();
  const Dataset* test = &testing::TestSet();
  TrainerOptions o = SmallRun();
  o.max_steps = 0;
  EXPECT_EQ(Trainer::Create(o, train, test, backend).status().code(),
            Status::Code::kInvalidArgument);
  o = SmallRun();
  EXPECT_FALSE(Trainer::Create(o, train, nullptr, backend).ok());  // rank 0 evaluates
  o.learning_rate = -1;
  EXPECT_FALSE(Trainer::Create(o, train, test, backend).ok());
  o = SmallRun();
  o.eval_every = 0;
  EXPECT_FALSE(Trainer::Create(o, train, test, backend).ok());
  o = SmallRun();
  o.target_accuracy = 0.9;
  o.eval_ranks = {};
  EXPECT_FALSE(Trainer::Create(o, train, test, backend).ok());
  o = SmallRun();
  o.batch_size = 40000;  // larger than a shard of 30000
  EXPECT_FALSE(Trainer::Create(o, train, test, backend).ok());
  for (double m : {-0.1, 1.0, std::nan("")}) {
    o = SmallRun();
    o.momentum = m;
    auto t = Trainer::Create(o, train, test, backend);
    EXPECT_EQ(t.status().code(), Status::Code::kInvalidArgument) << m;
    EXPECT_NE(t.status().message().find("momentum"), std::string::npos) << t.status().message();
  }
}

// Four small steps of `o` with a compute floor of `floor_s`, each logged.
Result<RunMetrics> RunFourFlooredSteps(TrainerOptions o, double floor_s, Backend& backend) {
  o.max_steps = 4;
  o.batch_size = 32;
  o.compute_floor_s = floor_s;
  o.log_iterations = true;
  auto trainer = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
  if (!trainer.ok()) return trainer.status();
  return (*trainer)->Run();
}

// A compute floor makes every step's computation last at least that long
// (slept): its compute time, per step and in total, is never below it.
TEST(TrainerTest, AComputeFloorMakesEveryStepLastAtLeastThatLong) {
  RecordingBackend backend;
  TrainerOptions o = SmallRun();
  auto m = RunFourFlooredSteps(o, 0.03, backend);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->iteration_log.size(), 4u);
  for (const auto& it : m->iteration_log) EXPECT_GE(it.compute_s, 0.03) << it.step;
  EXPECT_GE(m->compute_s, 4 * 0.03);
  EXPECT_EQ(m->straggler_sleep_s, 0);  // the floor is compute, not a straggler's sleep
  for (double floor : {-0.001, 61.0, std::nan("")}) {
    o.compute_floor_s = floor;
    auto bad = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
    EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument) << floor;
    EXPECT_NE(bad.status().message().find("compute floor"), std::string::npos);
  }
}

// The floor counts from when the pulled data reached the host: a Pull that
// returns 120 ms after its data came (a process that got a core late) leaves
// nothing of a 100 ms floor to sleep, so the step computes only its gradient.
// After an evaluation the floor counts from its end (the step starts then).
TEST(TrainerTest, AComputeFloorCountsFromWhenThePulledDataArrived) {
  class LateProcess : public RecordingBackend {
   public:
    Status Pull(std::span<float> model, SyncTiming* timing) override {
      const auto arrived = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
      Status s = RecordingBackend::Pull(model, timing);
      timing->data_arrival = arrived;
      return s;
    }
  } backend;
  TrainerOptions o = SmallRun();
  o.eval_every = 1000;  // step 0 only (evaluated before it is computed)
  auto m = RunFourFlooredSteps(o, 0.1, backend);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->iteration_log.size(), 4u);
  EXPECT_GE(m->iteration_log[0].compute_s, 0.1) << "after the evaluation: the whole floor";
  for (size_t i = 1; i < 4; ++i) {
    const auto& it = m->iteration_log[i];
    EXPECT_LT(it.compute_s, 0.1) << it.step << ": the floor had passed while the data waited";
    EXPECT_GE(it.pull_s, 0.12) << it.step;
  }
}

// With momentum each rank pushes −lr/N · v, v = μ·v + g over its own
// gradients: the second update is −lr/N · (μ·g1 + g2).
TEST(TrainerTest, WithMomentumPushesTheScaledVelocity) {
  class SecondUpdate : public RecordingBackend {
   public:
    Status Push(std::span<const float> update, std::span<float> model, SyncTiming* t) override {
      if (pushes == 1) second_update.assign(update.begin(), update.end());
      if (pushes <= 1) models.emplace_back(model.begin(), model.end());
      return RecordingBackend::Push(update, model, t);
    }
    std::vector<float> second_update;
    std::vector<std::vector<float>> models;  // the model each update was computed on
  } backend;
  TrainerOptions o = SmallRun();
  o.max_steps = 2;
  o.learning_rate = 0.05;
  o.momentum = 0.9;
  o.batch_size = 32;
  o.seed = 17;
  auto trainer = Trainer::Create(o, testing::TrainSet(), &testing::TestSet(), backend);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  ASSERT_TRUE((*trainer)->Run().ok());
  ASSERT_EQ(backend.models.size(), 2u);

  auto batcher = ShardedBatcher::Create(testing::TrainSet(), {0, 2, 32, 17});
  ASSERT_TRUE(batcher.ok());
  auto net = Network::Create(ModelKind::kMlp);
  ASSERT_TRUE(net.ok());
  Batch batch;
  std::vector<float> g1(backend.models[0].size()), g2(g1.size());
  (*batcher)->Next(&batch);
  ASSERT_TRUE((*net)->Gradient(backend.models[0], batch, g1).ok());
  (*batcher)->Next(&batch);
  ASSERT_TRUE((*net)->Gradient(backend.models[1], batch, g2).ok());
  const float scale = static_cast<float>(-0.05 / 2);
  ASSERT_EQ(backend.first_update.size(), g1.size());
  ASSERT_EQ(backend.second_update.size(), g1.size());
  for (size_t i = 0; i < g1.size(); ++i) {
    ASSERT_EQ(backend.first_update[i], scale * g1[i]) << i;
    ASSERT_EQ(backend.second_update[i], scale * (0.9f * g1[i] + g2[i])) << i;
  }
}

}  // namespace
}  // namespace serene::train
