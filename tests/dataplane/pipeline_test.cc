// Pipeline-level flows: joining, seeding, restarts, READ rules, output bounds.
#include "dataplane/pipeline.h"

#include <gtest/gtest.h>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::JobConfig;
using dataplane::Verdict;
using proto::Op;

JobConfig Job(uint32_t workers, BarrierParams p) { return TestJob(workers, p, 6, 3); }

TEST(Pipeline, CreateJobRefusesDuplicatesAndInvalidConfigs) {
  dataplane::Pipeline p;
  ASSERT_TRUE(p.CreateJob(Job(2, BarrierParams::Sync())).ok());
  auto dup = p.CreateJob(Job(2, BarrierParams::Sync()));
  EXPECT_EQ(dup.code(), Status::Code::kAlreadyExists);
  JobConfig bad = Job(2, BarrierParams::Sync());
  bad.id = 2;
  bad.workers = 0;
  EXPECT_EQ(p.CreateJob(bad).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(p.JobIds(), std::vector<uint16_t>{1});
  EXPECT_EQ(p.DeleteJob(5).code(), Status::Code::kNotFound);
}

TEST(Pipeline, ConfigIsTheJobAsCreatedAndNotFoundOnceDeleted) {
  dataplane::Pipeline p;
  JobConfig job = Job(3, BarrierParams::Ssp(4));
  job.id = 7;
  ASSERT_TRUE(p.CreateJob(job).ok());
  auto config = p.Config(7);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->id, 7);
  EXPECT_EQ(config->workers, 3u);
  EXPECT_EQ(config->row_width, job.row_width);
  EXPECT_EQ(config->rows(), job.rows());
  EXPECT_EQ(p.Config(8).status().code(), Status::Code::kNotFound);
  ASSERT_TRUE(p.DeleteJob(7).ok());
  EXPECT_EQ(p.Config(7).status().code(), Status::Code::kNotFound);
}

TEST(Pipeline, NonZeroRanksCannotSeed) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  EXPECT_EQ(h.Inc(1, 0, 0, {1, 1, 1}).reason, DropReason::kIncSeedNotRank0);
  EXPECT_EQ(h.Model(), std::vector<int32_t>(6, 0));
}

TEST(Pipeline, ReadWhileWaitingIsRefused) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  h.Step(0, 1, std::vector<int32_t>(6, 0));
  dataplane::ProcessResult r;
  auto e = h.Send(h.Req(Op::kRead, 0).Clock(2).Row(0), 0, &r);
  EXPECT_EQ(r.reason, DropReason::kNotReleased);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].values[0], static_cast<int32_t>(proto::ErrorCode::kNotReleased));
}

TEST(Pipeline, RestartedRankLearnsWhereItStandsAndGetsTheModel) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  h.Step(0, 1, std::vector<int32_t>(6, 1));
  // Rank 0 crashes while waiting and restarts on another port. While its old
  // binding is live the JOIN is refused (rank_in_use); once the rank is
  // evicted (the daemon's silence evictor, or serene-ctl evict) it joins.
  auto refused = h.JoinFrom(0, WorkerAddr(0, 50000));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].header.op, Op::kError);
  EXPECT_EQ(refused[0].values[0], static_cast<int32_t>(proto::ErrorCode::kRankInUse));
  dataplane::Output evict_out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &evict_out).ok());
  EXPECT_TRUE(evict_out.empty()) << "rank 1 waits for nobody";
  auto ack = h.JoinFrom(0, WorkerAddr(0, 50000));
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].values[proto::join_ack::kDone], 1);
  EXPECT_TRUE(ack[0].header.flags & proto::flags::kWaiting);
  // Rank 1 completes clock 1: the RELEASE goes to rank 0's new address.
  auto e = h.Step(1, 1, std::vector<int32_t>(6, 1));
  bool to_new = false;
  for (const auto& x : OfOp(e, Op::kRelease)) {
    if (x.header.worker == 0) to_new = x.dst == WorkerAddr(0, 50000);
  }
  EXPECT_TRUE(to_new);
  // It reads the current model from the switch alone.
  auto d = h.Send(h.Req(Op::kRead, 0).Clock(2).Row(1), 0);
  EXPECT_TRUE(d.empty() || d[0].header.op == Op::kCookie) << "old address is refused";
  auto row = h.SendRaw(h.Req(Op::kRead, 0).Clock(2).Row(1).Build(), WorkerAddr(0, 50000));
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0].values, (std::vector<int32_t>{6, 7, 8}));
}

TEST(Pipeline, RepliesEchoJobWorkerClockAndCarryTheKey) {
  Harness h;
  h.CreateJob(Job(1, BarrierParams::Sync()));
  h.Join(0);
  auto e = h.Step(0, 0, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kRelease);
  EXPECT_EQ(e[0].header.job, 1);
  EXPECT_EQ(e[0].header.worker, 0);
  EXPECT_EQ(e[0].header.clock, 0u);
  EXPECT_EQ(e[0].header.key, h.key());
  EXPECT_EQ(e[0].dst, WorkerAddr(0));
}

TEST(Pipeline, WaitingTimeIsMeasuredWithTheCallersClock) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(6, 0));
  h.now = 10'000;
  h.Step(0, 1, std::vector<int32_t>(6, 0));
  auto t = h.Telemetry();
  EXPECT_TRUE(t.workers[0].waiting);
  EXPECT_EQ(t.workers[0].wait_since, 10'000u);
  h.now = 25'000;
  h.Step(1, 1, std::vector<int32_t>(6, 0));
  EXPECT_EQ(h.Telemetry().workers[0].counters.wait_ns, 15'000u);
}

TEST(Pipeline, TimeStampsOutOfOrderNeverMakeWaitingNegative) {
  // Two switch threads may stamp packets slightly out of order.
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(6, 0));
  h.now = 50'000;
  h.Step(0, 1, std::vector<int32_t>(6, 0));
  h.now = 40'000;  // an earlier stamp from another thread
  h.Step(1, 1, std::vector<int32_t>(6, 0));
  EXPECT_EQ(h.Telemetry().workers[0].counters.wait_ns, 0u);
  h.now = 3'000'000;
  h.Join(1);
  h.now = 2'500'000;  // another thread's older stamp
  h.Join(1);
  EXPECT_EQ(h.Telemetry().workers[1].last_seen, 3'000'000u) << "last seen never goes back";
}

TEST(Pipeline, PaceRegistersFollowClockArrivals) {
  Harness h;
  h.CreateJob(Job(1, BarrierParams::Sync()));
  h.JoinAll(1);
  h.now = 1'000'000;
  h.Seed(std::vector<int32_t>(6, 0));  // CLOCK(0), released at once
  auto t = h.Telemetry();
  EXPECT_EQ(t.workers[0].iter_ns, 0u) << "no sample before two completed clocks";
  EXPECT_EQ(t.workers[0].work_ns, 0u) << "clock 0 started at JOIN, not at a RELEASE";
  h.now = 1'800'000;
  h.Step(0, 1, std::vector<int32_t>(6, 0));
  t = h.Telemetry();
  EXPECT_EQ(t.workers[0].iter_ns, 800'000u);
  EXPECT_EQ(t.workers[0].work_ns, 800'000u);
  EXPECT_EQ(t.workers[0].last_work_ns, 800'000u);
  EXPECT_EQ(t.workers[0].completed_at, 1'800'000u);
  h.now = 3'400'000;  // a 1.6 ms step: the EWMA moves 1/8 of the way
  h.Step(0, 2, std::vector<int32_t>(6, 0));
  t = h.Telemetry();
  EXPECT_EQ(t.workers[0].work_ns, 900'000u);
  EXPECT_EQ(t.workers[0].last_work_ns, 1'600'000u);
}

TEST(Pipeline, EvictIfSilentEvictsOnlyJoinedLiveRanksSilentLongEnough) {
  Harness h;
  h.CreateJob(Job(3, BarrierParams::Sync()));
  h.Join(0);
  h.Join(1);  // rank 2 never joins
  dataplane::Output out = dataplane::Output::ForBatch(1);
  h.now += 500;
  auto r = h.pipeline().EvictIfSilent(1, 0, 1000, h.now, &out);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r) << "silent for 500 ns only";
  h.now += 1000;
  EXPECT_TRUE(*h.pipeline().EvictIfSilent(1, 0, 1000, h.now, &out));
  EXPECT_FALSE(*h.pipeline().EvictIfSilent(1, 0, 1000, h.now, &out)) << "already out";
  EXPECT_FALSE(*h.pipeline().EvictIfSilent(1, 2, 1000, h.now, &out)) << "never joined";
  EXPECT_FALSE(*h.pipeline().EvictIfSilent(1, 7, 1000, h.now, &out)) << "no such rank";
  EXPECT_FALSE(h.pipeline().EvictIfSilent(9, 0, 1000, h.now, &out).ok()) << "no such job";
  auto t = h.Telemetry();
  EXPECT_FALSE(t.workers[0].live);
  EXPECT_EQ(t.workers[0].counters.evictions, 1u);
  EXPECT_TRUE(t.workers[1].live);
}

TEST(Pipeline, EvictionReleasesThePeersTheSilentRankHeld) {
  Harness h;
  h.CreateJob(Job(3, BarrierParams::Sync()));
  h.JoinAll(3);
  h.Seed(std::vector<int32_t>(6, 0));
  h.Step(0, 1, std::vector<int32_t>(6, 1));
  h.Step(1, 1, std::vector<int32_t>(6, 1));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  bool was_live = false;
  ASSERT_TRUE(h.pipeline().Evict(1, 2, h.now, &out, &was_live).ok());
  EXPECT_TRUE(was_live);
  EXPECT_EQ(out.size(), 2u) << "ranks 0 and 1 released";
  // The evicted rank comes back: it resumes at the slowest live clock.
  auto ack = h.Join(2);
  auto acks = OfOp(ack, Op::kJoinAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].values[proto::join_ack::kDone], 1) << "jumped to the live ranks' clock";
  EXPECT_TRUE(h.Telemetry().workers[2].live);
}

}  // namespace
}  // namespace serene::testing

namespace serene::testing {
namespace {

// JOIN_ACK's incarnation: the same job id re-created (a restarted switch, a
// delete and create) gets another, so a rank can tell a lost table from a
// delayed reply.
TEST(Pipeline, AReCreatedJobHasAnotherIncarnation) {
  auto incarnation = [](Harness& h) {
    auto acks = OfOp(h.Join(0), proto::Op::kJoinAck);
    EXPECT_EQ(acks.size(), 1u);
    EXPECT_EQ(acks[0].values.size(), proto::join_ack::kCount);
    return acks[0].values[proto::join_ack::kIncarnation];
  };
  Harness h;
  h.CreateJob(TestJob(2, dataplane::BarrierParams::Sync(), 6, 3));
  const int32_t first = incarnation(h);
  EXPECT_NE(first, 0);
  EXPECT_EQ(incarnation(h), first) << "a repeated JOIN sees the same job";
  ASSERT_TRUE(h.pipeline().DeleteJob(1).ok());
  h.CreateJob(TestJob(2, dataplane::BarrierParams::Sync(), 6, 3));
  EXPECT_NE(incarnation(h), first) << "the same id, created again";
}

}  // namespace
}  // namespace serene::testing
