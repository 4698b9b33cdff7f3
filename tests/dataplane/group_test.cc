// The job's reply group: configuration, the JOIN_ACK that advertises it and
// the READ replies that go to it.
#include <gtest/gtest.h>

#include <cstdint>

#include "dataplane/job_config.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobConfig;
using proto::Op;
namespace flags = proto::flags;

proto::Endpoint Group() {
  auto g = dataplane::ParseGroup("239.83.0.7:7100");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : proto::Endpoint{};
}

JobConfig GroupJob(BarrierParams p) {
  JobConfig c = TestJob(2, p, 6, 3);
  c.group = Group();
  return c;
}

TEST(GroupConfig, SpecParsesAndPrintsTheGroup) {
  auto c = JobConfig::ParseSpec("id=3,workers=2,elements=10,group=239.83.0.7:7100");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->group, Group());
  EXPECT_NE(c->ToString().find(",group=239.83.0.7:7100"), std::string::npos) << c->ToString();
  auto again = JobConfig::ParseSpec(c->ToString());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->group, c->group);
  auto none = JobConfig::ParseSpec("id=3,workers=2,elements=10");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->group.valid());
  EXPECT_EQ(none->ToString().find("group"), std::string::npos);
}

TEST(GroupConfig, BadGroupsAreRefusedWithTheValue) {
  for (const char* bad : {"10.0.0.1:7100", "239.83.0.7", "239.83.0.7:0", "239.83.0.7:70000",
                          "[ff02::1]:7100", "239.83.0:7100", "group"}) {
    auto c = JobConfig::ParseSpec(std::string("id=3,workers=2,elements=10,group=") + bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find(bad), std::string::npos) << c.status().message();
  }
  JobConfig c = TestJob(2, BarrierParams::Sync(), 6, 3);
  c.group = Group();
  c.group.addr[0] = 10;  // not multicast
  EXPECT_FALSE(c.Validate().ok());
}

TEST(GroupJoinAck, AdvertisesTheGroupOnlyWhenTheJobHasOne) {
  Harness with;
  with.CreateJob(GroupJob(BarrierParams::Sync()));
  auto ack = with.Join(0);
  ASSERT_EQ(ack.size(), 1u);
  ASSERT_EQ(ack[0].values.size(), proto::join_ack::kCountWithGroup);
  EXPECT_EQ(static_cast<uint32_t>(ack[0].values[proto::join_ack::kGroupAddress]),
            (239u << 24) | (83u << 16) | 7u);
  EXPECT_EQ(ack[0].values[proto::join_ack::kGroupPort], 7100);

  Harness without;
  without.CreateJob(TestJob(2, BarrierParams::Sync(), 6, 3));
  ack = without.Join(0);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].values.size(), proto::join_ack::kCount) << "the JOIN_ACK every switch sends";
}

TEST(GroupRead, AnExactRowAskedForTheGroupGoesToTheGroup) {
  Harness h;
  h.CreateJob(GroupJob(BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  auto e = h.Send(h.Req(Op::kRead, 1).Clock(1).Row(1).Flags(flags::kGroup), 1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kReadReply);
  EXPECT_EQ(e[0].dst, Group());
  EXPECT_EQ(e[0].header.worker, 1) << "it names the rank that asked";
  EXPECT_EQ(e[0].header.flags & (flags::kGroup | flags::kExact), flags::kGroup | flags::kExact);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{4, 5, 6}));
  // Without the flag (a retransmission, a rank not subscribed): to the rank.
  e = h.Send(h.Req(Op::kRead, 1).Clock(1).Row(1), 1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].dst, WorkerAddr(1));
  EXPECT_EQ(e[0].header.flags & flags::kGroup, 0);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{4, 5, 6}));
}

TEST(GroupRead, TheFlagIsIgnoredWithoutAGroupOrAnExactRow) {
  Harness no_group;
  no_group.CreateJob(TestJob(2, BarrierParams::Sync(), 6, 3));
  no_group.JoinAll(2);
  no_group.Seed({1, 2, 3, 4, 5, 6});
  auto e = no_group.Send(no_group.Req(Op::kRead, 0).Clock(1).Row(0).Flags(flags::kGroup), 0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].dst, WorkerAddr(0));
  EXPECT_EQ(e[0].header.flags & flags::kGroup, 0);

  // ASYNC reads the live table: each rank's view may differ, so the reply
  // is the asking rank's alone.
  Harness async;
  async.CreateJob(GroupJob(BarrierParams::Async()));
  async.JoinAll(2);
  async.Seed({1, 2, 3, 4, 5, 6});
  async.Step(0, 1, {1, 1, 1, 1, 1, 1});
  e = async.Send(async.Req(Op::kRead, 0).Clock(2).Row(0).Flags(flags::kGroup), 0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kReadReply);
  EXPECT_EQ(e[0].header.flags & flags::kExact, 0);
  EXPECT_EQ(e[0].dst, WorkerAddr(0));
  EXPECT_EQ(e[0].header.flags & flags::kGroup, 0);
}

std::vector<Emitted> IncOf(Harness& h, uint16_t w, uint32_t clock, uint32_t row,
                           std::vector<int32_t> v) {
  return h.Send(h.Req(Op::kInc, w).Clock(clock).Row(row).Values(std::move(v)), w);
}

TEST(GroupCompletedRow, TheIncThatCompletesARowSendsItToTheGroupAsTheNextClocksExactRow) {
  Harness h;
  h.CreateJob(GroupJob(BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(IncOf(h, 0, 1, 1, {10, 10, 10}).empty()) << "rank 1 has not INC'd row 1 yet";
  auto e = IncOf(h, 1, 1, 1, {20, 20, 20});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kReadReply);
  EXPECT_EQ(e[0].dst, Group());
  EXPECT_EQ(e[0].header.worker, proto::kNoWorker) << "no rank asked for it";
  EXPECT_EQ(e[0].header.clock, 2u) << "the row of the next clock";
  EXPECT_EQ(e[0].header.row, 1u);
  EXPECT_EQ(e[0].header.flags & (flags::kGroup | flags::kExact), flags::kGroup | flags::kExact);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{34, 35, 36}));
  // A duplicate completes nothing again; clock 1's exact READs still see
  // the model after clock 0.
  EXPECT_TRUE(IncOf(h, 1, 1, 1, {20, 20, 20}).empty());
  auto r = h.Read(0, 1, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(h.Telemetry().counters.completed_rows, 1u);
  // Row 0, INC'd by rank 1 only, is not complete: READ at clock 2 as before.
  EXPECT_TRUE(IncOf(h, 1, 1, 0, {1, 1, 1}).empty());
  h.Clock(0, 1, 1);
  h.Clock(1, 1, 2);
  // What a READ of clock 2 returns is what the group got.
  r = h.Read(0, 2, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{34, 35, 36}));
  EXPECT_EQ(r->header.flags & flags::kExact, flags::kExact);
  // Clock 2: both ranks INC row 1 again; the second completes it.
  EXPECT_TRUE(IncOf(h, 1, 2, 1, {1, 1, 1}).empty());
  e = IncOf(h, 0, 2, 1, {2, 2, 2});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.clock, 3u);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{37, 38, 39}));
  EXPECT_EQ(h.Telemetry().counters.completed_rows, 2u);
}

// The INC that completes a row folds it at once (aggregation_table.h): the
// fold is counted then, not again when the row is cleared; the model and a
// live READ include the clock, an exact READ of the completing clock still
// gets the model before it, and the next clock's first INC replaces the kept
// pending row instead of adding to it.
TEST(GroupCompletedRow, TheCompletingIncFoldsTheRowAndExactReadsOfItsClockSeeTheModelBefore) {
  Harness h;
  h.CreateJob(GroupJob(BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  const uint64_t folds_before = h.Telemetry().counters.folds;
  EXPECT_TRUE(IncOf(h, 0, 1, 0, {10, 20, 30}).empty());
  ASSERT_EQ(IncOf(h, 1, 1, 0, {100, 200, 300}).size(), 1u);
  EXPECT_EQ(h.Telemetry().counters.folds, folds_before + 1) << "folded by the completing INC";
  EXPECT_EQ(h.Model(), (std::vector<int32_t>{111, 222, 333, 4, 5, 6}));
  // Rank 1 READs its own clock after both INCs (a late or repeated READ):
  // the model after clock 0, flagged exact.
  auto r = h.Read(1, 1, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r->header.flags & flags::kExact, flags::kExact);
  // Row 1, INC'd by rank 1 only, stays pending and folds lazily, at the
  // first access after both ranks completed clock 1.
  EXPECT_TRUE(IncOf(h, 1, 1, 1, {7, 7, 7}).empty());
  h.Clock(0, 1, 1);
  h.Clock(1, 1, 2);
  EXPECT_EQ(h.ReadAll(0, 2), (std::vector<int32_t>{111, 222, 333, 11, 12, 13}));
  EXPECT_EQ(h.Telemetry().counters.folds, folds_before + 2) << "row 0 is not counted twice";
  // Clock 2: pending still holds clock 1's sum of row 0; the first INC
  // replaces it.
  EXPECT_TRUE(IncOf(h, 0, 2, 0, {1, 1, 1}).empty());
  auto e = IncOf(h, 1, 2, 0, {2, 2, 2});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{114, 225, 336}));
  r = h.Read(0, 2, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{111, 222, 333}));
  EXPECT_EQ(h.Model(), (std::vector<int32_t>{114, 225, 336, 11, 12, 13}));
}

// A completed row whose sum clamps is sent flagged and left to the lazy
// fold: an exact READ of its clock still gets the model before, exactly.
TEST(GroupCompletedRow, ARowWhoseSumClampsIsNotFoldedEarly) {
  Harness h;
  h.CreateJob(GroupJob(BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed({INT32_MAX - 1, 2, 3, 4, 5, 6});
  const uint64_t folds_before = h.Telemetry().counters.folds;
  EXPECT_TRUE(IncOf(h, 0, 1, 0, {1, 0, 0}).empty());
  auto e = IncOf(h, 1, 1, 0, {1, 0, 0});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{INT32_MAX, 2, 3}));
  EXPECT_TRUE(e[0].header.flags & flags::kSaturated);
  EXPECT_EQ(h.Telemetry().counters.folds, folds_before);
  auto r = h.Read(0, 1, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{INT32_MAX - 1, 2, 3}));
  h.Clock(0, 1, 1);
  h.Clock(1, 1, 1);
  r = h.Read(0, 2, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{INT32_MAX, 2, 3}));
  EXPECT_TRUE(r->header.flags & flags::kSaturated);
  EXPECT_EQ(h.Telemetry().counters.folds, folds_before + 1) << "folded lazily, once";
}

TEST(GroupCompletedRow, NotSentWithoutAGroupNorWhenTheTableIsLive) {
  Harness no_group;
  no_group.CreateJob(TestJob(2, BarrierParams::Sync(), 6, 3));
  no_group.JoinAll(2);
  no_group.Seed({1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(IncOf(no_group, 0, 1, 0, {1, 1, 1}).empty());
  EXPECT_TRUE(IncOf(no_group, 1, 1, 0, {1, 1, 1}).empty()) << "no group: nowhere to send it";

  // SSP INCs go to the live table: a row is never "the model after clock c".
  Harness ssp;
  ssp.CreateJob(GroupJob(BarrierParams::Ssp(1)));
  ssp.JoinAll(2);
  ssp.Seed({1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(IncOf(ssp, 0, 1, 0, {1, 1, 1}).empty());
  EXPECT_TRUE(IncOf(ssp, 1, 1, 0, {1, 1, 1}).empty());
  EXPECT_EQ(ssp.Telemetry().counters.completed_rows, 0u);

  // Clock 0 seeds the visible table directly: nothing is sent for clock 1.
  Harness seed;
  seed.CreateJob(GroupJob(BarrierParams::Sync()));
  seed.JoinAll(2);
  EXPECT_TRUE(IncOf(seed, 0, 0, 0, {1, 2, 3}).empty());
}

}  // namespace
}  // namespace serene::testing
