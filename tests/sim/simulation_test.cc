// The simulator's job runs (timing only): the real pipeline's barrier decides
// who waits, so policies, a Lua rule change and link loss all show in what the
// ranks measured; runs are deterministic.
#include "sim/simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "testing/pause_log.h"
#include "testing/scratch_dir.h"
#include "train/metrics.h"

namespace serene::sim {
namespace {

constexpr size_t kMlpElements = 79510;

SimulationOptions Timing(const std::string& policy, int workers = 4, int64_t steps = 60) {
  SimulationOptions o;
  o.workers = workers;
  o.row_width = 4096;
  o.policy = policy;
  o.max_steps = steps;
  o.eval_every = 10;
  o.compute = {0.006, 0.05};
  o.seed = 3;
  return o;
}

// Every rank sleeps 4× its compute time with probability 0.3.
SimulationOptions WithStragglers(SimulationOptions o) {
  train::StragglerSpec s;
  s.kind = train::StragglerKind::kSlowWorker;
  s.probability = 0.3;
  s.min_factor = s.max_factor = 4;
  o.straggler = s;
  for (int r = 0; r < o.workers; ++r) o.straggler_ranks.push_back(r);
  return o;
}

// `rank` stops once for `duration_s`, at an iteration drawn with probability p.
SimulationOptions WithFailure(SimulationOptions o, int rank, double p, double duration_s) {
  train::StragglerSpec s;
  s.kind = train::StragglerKind::kFailure;
  s.probability = p;
  s.duration_s = duration_s;
  o.straggler = s;
  o.straggler_ranks = {rank};
  return o;
}

SimulationResult Simulate(const SimulationOptions& o) {
  TimingWork work(kMlpElements);
  auto r = RunSimulation(o, work);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : SimulationResult();
}

double Jct(const SimulationResult& r) {
  double jct = 0;
  for (const auto& m : r.ranks) jct = std::max(jct, m.job_completion_s);
  return jct;
}

double Waiting(const SimulationResult& r) {
  double w = 0;
  for (const auto& m : r.ranks) w += m.pull_s + m.push_s;
  return w;
}

TEST(SimulationTest, SyncRunsEveryStepOfEveryRankThroughThePipeline) {
  const SimulationResult r = Simulate(Timing("sync"));
  ASSERT_EQ(r.ranks.size(), 4u);
  const uint64_t rows = (kMlpElements + 4095) / 4096;
  for (const auto& m : r.ranks) {
    EXPECT_EQ(m.iterations, 60);
    EXPECT_EQ(m.stop_reason, train::StopReason::kStepLimit);
    // 60 steps of 6 ms ± 5 %, plus the transfers.
    EXPECT_GT(m.job_completion_s, 60 * 0.006 * 0.95);
    EXPECT_LT(m.job_completion_s, 60 * 0.006 * 1.05 + 0.05);
  }
  // The pipeline saw every INC (60 clocks + the seeding rows of rank 0) and
  // every READ (61 pulls: the one at the step limit included), and dropped
  // nothing: no loss, no retransmission.
  const auto& c = r.switch_counters;
  EXPECT_EQ(c.rx_by_op[static_cast<size_t>(proto::Op::kInc)], 4 * 60 * rows + rows);
  EXPECT_EQ(c.rx_by_op[static_cast<size_t>(proto::Op::kRead)], 4 * 61 * rows);
  EXPECT_EQ(c.rx_by_op[static_cast<size_t>(proto::Op::kClock)], 4 * 61u);
  // Each rank's first JOIN is answered with a COOKIE (protocol.md, "Return
  // routability"); nothing else is refused.
  for (size_t i = 1; i < c.drops.size(); ++i) {
    const bool cookie = i == static_cast<size_t>(dataplane::DropReason::kJoinCookie);
    EXPECT_EQ(c.drops[i], cookie ? 4u : 0u) << "drop reason " << i;
  }
  for (const auto& k : r.counters) {
    EXPECT_EQ(k.read_retransmits, 0u);
    EXPECT_EQ(k.nacks, 0u);
  }
  EXPECT_EQ(r.lost, 0u);
}

TEST(SimulationTest, SameOptionsGiveTheSameRunBitForBit) {
  const SimulationOptions o = WithStragglers(Timing("ssp:3"));
  const SimulationResult a = Simulate(o), b = Simulate(o);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(train::MetricsToJson(a.ranks[i]), train::MetricsToJson(b.ranks[i]));
  }
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.packets, b.packets);
  // A different seed draws different stragglers.
  SimulationOptions other = o;
  other.seed = 4;
  EXPECT_NE(train::MetricsToJson(Simulate(other).ranks[0]), train::MetricsToJson(a.ranks[0]));
}

// A compute floor above the modelled compute time replaces it (serene-train
// sleeps the rest of the step): every step takes the floor, never less — the
// jitter varies the computation, not the sleep after it — and a computation
// that the jitter carries past the floor is that long.
TEST(SimulationTest, AComputeFloorAboveTheModelledTimeReplacesIt) {
  SimulationOptions o = Timing("async", 4, 40);
  o.compute.floor_s = 0.02;
  for (const double jitter : {0.0, 0.05}) {
    o.compute.jitter = jitter;
    for (const train::RunMetrics& m : Simulate(o).ranks) {
      ASSERT_EQ(m.iterations, 40);
      EXPECT_NEAR(m.compute_s, 40 * 0.02, 1e-9) << m.rank << " jitter " << jitter;
    }
  }
  o.compute.compute_s = 0.02;  // at the floor: the jitter's longer half shows
  const SimulationResult r = Simulate(o);
  ASSERT_EQ(r.ranks.size(), 4u);
  for (const train::RunMetrics& m : r.ranks) {
    EXPECT_GT(m.compute_s, 40 * 0.02 + 1e-6) << m.rank;  // some steps above it
    EXPECT_LT(m.compute_s, 40 * 0.02 * 1.05) << m.rank;  // none below it
  }
  // Below the modelled time it changes nothing.
  SimulationOptions low = Timing("async", 4, 40);
  low.compute.floor_s = 0.001;
  EXPECT_EQ(train::MetricsToJson(Simulate(low).ranks[1]),
            train::MetricsToJson(Simulate(Timing("async", 4, 40)).ranks[1]));
}

// A switch with a time per packet serves the packets one after another:
// under SYNC without jitter every rank pushes its rows at once, and the
// barrier opens only after the switch has been through all of them, then the
// ranks' READs queue the same way. A step is longer by about both bursts;
// nothing else changes (every packet is still processed, none is lost).
TEST(SimulationTest, ASwitchWithATimePerPacketQueuesTheBurstsOfABarrier) {
  SimulationOptions o = Timing("sync", 4, 30);
  o.compute.jitter = 0;
  const SimulationResult line_rate = Simulate(o);
  o.switch_service_s = 20e-6;
  const SimulationResult queued = Simulate(o);
  const double rows = (kMlpElements + 4095) / 4096;
  const double per_step = (Jct(queued) - Jct(line_rate)) / 30;
  // At least the push burst served one packet at a time (each rank's uplink
  // takes 13 us per row, less than the switch), at most both bursts and the
  // CLOCKs served one at a time on top of what the links took.
  EXPECT_GT(per_step, 4 * rows * 20e-6) << per_step;
  EXPECT_LT(per_step, 2 * 4 * (rows + 1) * 20e-6) << per_step;
  EXPECT_EQ(queued.switch_counters.rx_by_op, line_rate.switch_counters.rx_by_op);
  EXPECT_EQ(queued.lost, 0u);
  for (const auto& k : queued.counters) EXPECT_EQ(k.read_retransmits, 0u);
  // Out of range: refused.
  TimingWork work(kMlpElements);
  o.switch_service_s = -1e-6;
  EXPECT_FALSE(RunSimulation(o, work).ok());
}

TEST(SimulationTest, AWiderWindowWaitsLessUnderStragglers) {
  const SimulationResult sync = Simulate(WithStragglers(Timing("sync")));
  const SimulationResult ssp = Simulate(WithStragglers(Timing("ssp:10")));
  const SimulationResult async = Simulate(WithStragglers(Timing("async")));
  // Same straggler draws (same seed), so the sleep is the same in every run.
  EXPECT_DOUBLE_EQ(sync.ranks[1].straggler_sleep_s, ssp.ranks[1].straggler_sleep_s);
  EXPECT_LT(Jct(ssp), Jct(sync));
  EXPECT_LE(Jct(async), Jct(ssp) * 1.0001);
  EXPECT_LT(Waiting(ssp), 0.5 * Waiting(sync));
  EXPECT_LT(Waiting(async), Waiting(ssp));
  // Under SSP(10) no rank is ever more than 10 clocks ahead of the slowest:
  // the switch's barrier allows nothing else, so every rank still ran every step.
  for (const auto& m : ssp.ranks) EXPECT_EQ(m.iterations, 60);
}

// Barrier wait (barrier_hold.h) is the time the switch held a rank for the
// others, without the transfers: none under ASYNC, however long the pushes.
TEST(SimulationTest, AsyncNeverHoldsARankAtTheBarrier) {
  const SimulationResult r = Simulate(WithStragglers(Timing("async")));
  for (const auto& m : r.ranks) {
    EXPECT_EQ(m.barrier_wait_s, 0);
    EXPECT_GT(m.push_s, 0);  // the transfers are still there
  }
}

// Rank 1 is twice as slow at every step (heterogeneous:2, no jitter): under
// SYNC rank 0 is held one compute time (6 ms) at each of its 60 clocks and
// rank 1 never (its wait at clock 0, while rank 0 seeds the model, is setup).
TEST(SimulationTest, SyncHoldsTheFastRankForTheSlowOnesExtraStep) {
  SimulationOptions o = Timing("sync", 2, 60);
  o.compute.jitter = 0;
  train::StragglerSpec s;
  s.kind = train::StragglerKind::kHeterogeneous;
  s.factor = 2;
  o.straggler = s;
  o.straggler_ranks = {1};
  const SimulationResult r = Simulate(o);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_NEAR(r.ranks[0].barrier_wait_s, 60 * 0.006, 1e-6);
  EXPECT_EQ(r.ranks[1].barrier_wait_s, 0);
  // The push time the rank sees also has its transfers: more than the hold.
  EXPECT_GT(r.ranks[0].push_s, r.ranks[0].barrier_wait_s + 60 * 0.0002);
}

// Sleeps relative to the wall-clock iteration grow with the waiting: SYNC,
// which waits most, gets longer sleeps and falls further behind ASYNC than
// with sleeps relative to the iteration without waiting (docs/results.md).
TEST(SimulationTest, WallClockSleepsPenalizeTheRunThatWaits) {
  auto run = [&](const std::string& policy, StragglerBase base) {
    SimulationOptions o = WithStragglers(Timing(policy));
    o.straggler->min_factor = 0.5;
    o.straggler->max_factor = 2;
    o.straggler_base = base;
    return Simulate(o);
  };
  const double fair =
      Jct(run("async", StragglerBase::kIteration)) / Jct(run("sync", StragglerBase::kIteration));
  const SimulationResult wall_sync = run("sync", StragglerBase::kWallIteration);
  const double wall = Jct(run("async", StragglerBase::kWallIteration)) / Jct(wall_sync);
  EXPECT_LT(wall, fair - 0.05) << "fair " << fair << ", wall " << wall;
  EXPECT_GT(wall_sync.ranks[0].straggler_sleep_s,
            run("sync", StragglerBase::kIteration).ranks[0].straggler_sleep_s);
}

TEST(SimulationTest, ARuleChangeFromALuaScriptTakesEffectInTheSimulatedSwitch) {
  testing::ScratchDir dir("serene-sim-test");
  const std::string script = dir.path() / "sync_then_async.lua";
  std::ofstream(script) << "return async():at(params.at)\n";
  SimulationOptions o = WithStragglers(Timing(script));
  o.params = {{"at", "30"}};
  const SimulationResult changed = Simulate(o);
  ASSERT_EQ(changed.changes.size(), 1u);
  EXPECT_EQ(changed.changes[0].rule, "async");
  EXPECT_EQ(changed.changes[0].effective_clock, 30u);
  const SimulationResult sync = Simulate(WithStragglers(Timing("sync")));
  const SimulationResult async = Simulate(WithStragglers(Timing("async")));
  // Half the run under each rule: between the two.
  EXPECT_LT(Jct(changed), Jct(sync));
  EXPECT_GT(Jct(changed), Jct(async));
}

// Rank 0's evaluations reach the policy as reported pauses, as serene-train
// reports them through the runtime API: one per evaluation before a step,
// each eval_s long; the other ranks report none.
TEST(SimulationTest, APolicySeesRankZerosEvaluationsAsPauses) {
  testing::ScratchDir dir("serene-sim-test");
  const std::string script = dir.path() / "pauses.lua";
  testing::WritePauseLoggingPolicy(script);
  SimulationOptions o = Timing(script, 2, 60);  // evaluations at steps 0, 10, .., 50 (60: the limit)
  o.compute.eval_s = 0.04;
  const SimulationResult r = Simulate(o);
  ASSERT_FALSE(r.controller_log.empty());
  const auto last = testing::LastPauseLine(r.controller_log.back());
  ASSERT_TRUE(last.has_value()) << r.controller_log.back();
  // The last call may come before the last evaluation's report.
  EXPECT_GE(last->rank0_pauses, 5);
  EXPECT_LE(last->rank0_pauses, 6);
  EXPECT_EQ(last->rank1_pauses, 0);
  EXPECT_NEAR(last->rank0_paused_s, last->rank0_pauses * 0.04, 1e-6);
}

TEST(SimulationTest, LossIsRecoveredByRetransmissionAndEveryStepStillRuns) {
  SimulationOptions o = Timing("sync", 4, 40);
  o.link.loss = 0.02;
  const SimulationResult r = Simulate(o);
  EXPECT_GT(r.lost, 0u);
  uint64_t resent = 0;
  for (const auto& k : r.counters)
    resent += k.read_retransmits + k.clock_retransmits + k.incs_resent;
  EXPECT_GT(resent, 0u);
  for (const auto& m : r.ranks) EXPECT_EQ(m.iterations, 40);
}

// A rank that stops for a minute is evicted after evict_after_s of silence,
// the others go on without it, and it JOINs again when it wakes and finishes.
TEST(SimulationTest, ASilentRankIsEvictedAndRejoins) {
  SimulationOptions o = WithFailure(Timing("sync", 3, 200), 2, 0.05, 60);
  o.evict_after_s = 2;
  const SimulationResult r = Simulate(o);
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.evictions, 1u);
  EXPECT_EQ(r.counters[2].rejoins, 1u);
  EXPECT_EQ(r.counters[0].rejoins, 0u);
  // Ranks 0 and 1 waited 2 s at most, not the minute.
  EXPECT_LT(r.ranks[0].job_completion_s, 200 * 0.0065 + 3);
  // Rank 2 resumed from the others' clock: it finished its budget after them.
  EXPECT_GT(r.ranks[2].job_completion_s, 60);
  for (const auto& m : r.ranks) EXPECT_EQ(m.stop_reason, train::StopReason::kStepLimit);
}

TEST(SimulationTest, RefusesOptionsTheSwitchRefuses) {
  TimingWork work(kMlpElements);
  SimulationOptions o = Timing("ssp:x");
  EXPECT_FALSE(RunSimulation(o, work).ok());
  o = Timing("sync", 2000);  // more ranks than the data plane holds
  auto r = RunSimulation(o, work);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("workers"), std::string::npos) << r.status().message();
  o = Timing("sync");
  o.max_steps = 0;
  EXPECT_FALSE(RunSimulation(o, work).ok());
}

TEST(SimulationTest, AJobThatCannotEndFailsAtItsVirtualDeadline) {
  // Under SYNC, a rank stopped for a virtual hour holds its peer; the run
  // fails when its deadline of 10 virtual seconds passes, naming the ranks.
  SimulationOptions o = WithFailure(Timing("sync", 2, 20), 1, 1, 3600);
  o.max_virtual_s = 10;
  o.evict_after_s = 0;  // no silence eviction: nothing lets rank 0 go on
  TimingWork work(kMlpElements);
  auto r = RunSimulation(o, work);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("rank 1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace serene::sim
