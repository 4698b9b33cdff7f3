// The top view: rendered from two snapshots, pace from their difference.
#include "ctl/top_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace serene::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kSecond = 1'000'000'000;

// A job of `done.size()` ranks at the switch time `now_ns`.
v1::JobTelemetry Snapshot(uint64_t now_ns, const std::vector<int64_t>& done) {
  v1::JobTelemetry t;
  t.mutable_job()->set_id(4);
  t.mutable_job()->set_workers(static_cast<uint32_t>(done.size()));
  t.set_now_ns(now_ns);
  t.set_live_workers(static_cast<uint32_t>(done.size()));
  // low: the slowest rank's clock, -1 while one has none.
  int64_t low = done.empty() ? -1 : done[0], high = -1;
  for (int64_t d : done) {
    high = std::max(high, d);
    low = std::min(low, d);
  }
  t.set_low(low);
  t.set_high(high);
  t.mutable_policy()->mutable_active()->set_text("ssp:10");
  t.mutable_policy()->set_active_epoch(3);
  t.mutable_policy()->set_max_released(high);
  for (size_t i = 0; i < done.size(); ++i) {
    v1::RankTelemetry* r = t.add_ranks();
    r->set_rank(static_cast<uint32_t>(i));
    r->set_done(done[i]);
    r->set_lag(done[i] < 0 ? 0 : high - done[i]);
    r->set_live(true);
    r->set_joined(true);
    r->set_wait_total_ns(1'500'000'000);
    r->set_silent_ns(12'000'000);
  }
  return t;
}

// The rank rows of a frame: the lines after the table header.
std::vector<std::string> RankRows(const std::string& frame) {
  std::vector<std::string> rows;
  std::istringstream in(frame);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (in_table) rows.push_back(line);
    if (line.starts_with("RANK")) in_table = true;
  }
  return rows;
}

TEST(ClockRateTest, ClocksPerSecondOnTheSwitchClock) {
  EXPECT_DOUBLE_EQ(*ClockRate(10, 1 * kSecond, 20, 3 * kSecond), 5.0);
  EXPECT_DOUBLE_EQ(*ClockRate(10, 0, 10, kSecond), 0.0);
  EXPECT_FALSE(ClockRate(-1, 0, 5, kSecond)) << "no clock before";
  EXPECT_FALSE(ClockRate(5, 0, -1, kSecond)) << "no clock now";
  EXPECT_FALSE(ClockRate(5, kSecond, 6, kSecond)) << "no time passed";
  EXPECT_FALSE(ClockRate(9, 0, 3, kSecond)) << "the clock went back";
}

TEST(TopViewTest, FirstFrameHasNoRates) {
  const v1::JobTelemetry now = Snapshot(5 * kSecond, {10, 8, -1});
  const std::string frame = RenderTop(nullptr, now, {"127.0.0.1:7001", std::chrono::seconds(1)});
  EXPECT_THAT(frame, HasSubstr("job 4 on 127.0.0.1:7001"));
  EXPECT_THAT(frame, HasSubstr("every 1s"));
  EXPECT_THAT(frame, HasSubstr("policy ssp:10  epoch 3  pending -"));
  EXPECT_THAT(frame, HasSubstr("live 3/3  low -  high 10  rate - clocks/s"));
  const auto rows = RankRows(frame);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_THAT(rows[0], HasSubstr("   0  yes      10    0  no"));
  EXPECT_THAT(rows[1], HasSubstr("   1  yes       8    2  no"));
  EXPECT_THAT(rows[2], HasSubstr("   2  yes       -    -  no"));
  for (const auto& r : rows) EXPECT_THAT(r, HasSubstr("1.5s")) << "wait total";
}

TEST(TopViewTest, SecondFrameShowsThePace) {
  const v1::JobTelemetry before = Snapshot(5 * kSecond, {10, 8, -1});
  const v1::JobTelemetry now = Snapshot(7 * kSecond, {20, 9, 0});
  const std::string frame = RenderTop(&before, now, {"sw:7001", std::chrono::milliseconds(500)});
  EXPECT_THAT(frame, HasSubstr("every 500ms"));
  EXPECT_THAT(frame, HasSubstr("rate 5 clocks/s")) << "high went 10 -> 20 in 2 s";
  const auto rows = RankRows(frame);
  ASSERT_EQ(rows.size(), 3u);
  // Columns: RANK LIVE CLOCK LAG WAITING WAIT NOW WAIT TOTAL CLOCKS/S WORK SILENT.
  EXPECT_THAT(rows[0], HasSubstr("1.5s         5"));
  EXPECT_THAT(rows[1], HasSubstr("1.5s       0.5"));
  EXPECT_THAT(rows[2], HasSubstr("1.5s         -")) << "rank 2 had no clock before";
}

TEST(TopViewTest, ShowsAPendingChangeAndTheEnd) {
  v1::JobTelemetry t = Snapshot(kSecond, {3, 3});
  v1::PolicyState* p = t.mutable_policy();
  p->set_swap_pending(true);
  p->mutable_next()->set_text("sync");
  p->set_next_epoch(4);
  p->set_swap_clock(100);
  t.set_finished(true);
  const std::string frame = RenderTop(nullptr, t, {"sw:7001", std::chrono::seconds(1)});
  EXPECT_THAT(frame, HasSubstr("pending sync from clock 100 (epoch 4)"));
  EXPECT_THAT(frame, HasSubstr("FINISHED"));
  EXPECT_THAT(frame, Not(HasSubstr("SATURATED")));
}

TEST(TopViewTest, ManyRanksAreCutToFitTheScreen) {
  const v1::JobTelemetry t = Snapshot(kSecond, std::vector<int64_t>(10, 5));
  TopContext context{"sw:7001", std::chrono::seconds(1), 4};
  const auto rows = RankRows(RenderTop(nullptr, t, context));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_THAT(rows[2], HasSubstr("   2  yes"));
  EXPECT_THAT(rows[3], HasSubstr("... 7 more rank(s)"));
  EXPECT_THAT(rows[3], HasSubstr("serene-ctl telemetry 4"));
  context.max_rank_rows = 10;
  EXPECT_EQ(RankRows(RenderTop(nullptr, t, context)).size(), 10u) << "they fit";
}

}  // namespace
}  // namespace serene::ctl
