// The telemetry view: summary lines and the rank table.
#include "ctl/telemetry_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace serene::ctl {
namespace {

using ::testing::HasSubstr;

v1::JobTelemetry TwoRanks() {
  v1::JobTelemetry t;
  v1::Job* job = t.mutable_job();
  job->set_id(2);
  job->set_workers(2);
  job->set_elements(1000);
  job->set_row_width(256);
  job->set_scale_log2(24);
  job->set_evict_after_ms(10'000);
  t.set_rows(4);
  t.set_live_workers(1);
  t.set_low(7);
  t.set_high(9);
  t.mutable_policy()->mutable_active()->set_text("quorum:1:4");
  t.mutable_policy()->set_active_epoch(2);
  t.mutable_policy()->set_max_released(9);
  v1::JobCounters* c = t.mutable_counters();
  (*c->mutable_rx_by_op())["INC"] = 40;
  (*c->mutable_rx_by_op())["CLOCK"] = 18;
  (*c->mutable_drops())["bad_key"] = 3;
  c->set_releases(17);
  c->set_swaps(1);
  v1::RankTelemetry* r0 = t.add_ranks();
  r0->set_rank(0);
  r0->set_done(9);
  r0->set_live(true);
  r0->set_joined(true);
  r0->set_waiting(true);
  r0->set_wait_now_ns(2'000'000);
  r0->set_wait_total_ns(1'500'000'000);
  r0->set_silent_ns(1'000'000);
  r0->set_work_ns(12'000'000);
  r0->set_iter_ns(15'000'000);
  r0->set_paused_ns(80'000'000);
  r0->set_pauses(2);
  r0->set_address("127.0.0.1:40000");
  r0->mutable_counters()->set_incs_duplicate(5);
  r0->mutable_counters()->set_nacks(2);
  v1::RankTelemetry* r1 = t.add_ranks();
  r1->set_rank(1);
  r1->set_done(-1);
  r1->set_silent_ns(-1);
  return t;
}

TEST(TelemetryViewTest, SummaryLines) {
  const std::string text = RenderTelemetry(TwoRanks());
  EXPECT_THAT(text, HasSubstr("job 2  workers 2 (1 live)  elements 1000 in 4 rows of 256  "
                              "scale 2^24  evict after 10s\n"));
  EXPECT_THAT(text, HasSubstr("policy quorum:1:4 (epoch 2)  pending -  max released 9\n"));
  EXPECT_THAT(text, HasSubstr("clocks low 7  high 9  finished no  saturated no\n"));
  EXPECT_THAT(text, HasSubstr("received CLOCK=18 INC=40\n")) << "sorted by name";
  EXPECT_THAT(text, HasSubstr("drops bad_key=3\n"));
  EXPECT_THAT(text, HasSubstr("releases 17  nacks 0  errors 0  swaps 1"));
}

TEST(TelemetryViewTest, RankTable) {
  const std::string text = RenderTelemetry(TwoRanks());
  EXPECT_THAT(text, HasSubstr("RANK  LIVE  WAITING  DONE  LAG  WAIT NOW  WAIT TOTAL  SILENT  "
                              "WORK TIME  ITER TIME  PAUSED  PAUSES  INCS DUP  NACKS  ERRORS  "
                              "ADDRESS\n"));
  EXPECT_THAT(text, HasSubstr("   0  yes   yes         9    0       2ms        1.5s     1ms  "
                              "     12ms       15ms    80ms       2         5      2       0  "
                              "127.0.0.1:40000\n"));
  EXPECT_THAT(text, HasSubstr("   1  no    no          -    -         -           0       -  "
                              "        -          -       -       0         0      0       0  -\n"));
}

TEST(TelemetryViewTest, NoEvictionAndNothingCounted) {
  v1::JobTelemetry t = TwoRanks();
  t.mutable_job()->set_evict_after_ms(0);
  t.clear_counters();
  const std::string text = RenderTelemetry(t);
  EXPECT_THAT(text, HasSubstr("evict after never"));
  EXPECT_THAT(text, HasSubstr("received none\ndrops none\n"));
}

}  // namespace
}  // namespace serene::ctl
