#include "sim/seed_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace serene::sim {
namespace {

experiment::RunSummary Summary(const std::string& label, double jct, double wait, double barrier) {
  experiment::RunSummary r;
  r.spec.label = label;
  r.jct_s = jct;
  r.wait_total_s = wait;
  r.iterations_rank0 = 100;
  r.final_accuracy = 0.85;
  r.target_reached_s = jct;
  train::RunMetrics m;
  m.job_completion_s = jct;
  m.barrier_wait_s = barrier;
  r.ranks = {m};
  return r;
}

TEST(SeedSummaryTest, SpreadOfSkipsNaNs) {
  const Spread s = SpreadOf({1, 2, 3, std::nan("")});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 2);
  EXPECT_DOUBLE_EQ(s.sd, 1);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 3);
  EXPECT_EQ(SpreadOf({}).n, 0);
  EXPECT_EQ(SpreadOf({5}).sd, 0);
  EXPECT_EQ(FormatSpread(SpreadOf({1, 2, 3}), 1), "2.0 ± 1.0");
  EXPECT_EQ(FormatSpread(SpreadOf({}), 1), "-");
}

TEST(SeedSummaryTest, BarrierWaitOfABaselineThatNeverWaitsIsZeroPercent) {
  std::vector<std::vector<experiment::RunSummary>> by_seed = {
      {Summary("ASYNC", 10, 4, 0), Summary("ASYNC again", 10, 4, 0)}};
  experiment::ComputeRatios(&by_seed[0]);
  const auto rows = SummarizeSeeds(by_seed);
  EXPECT_EQ(rows[1].barrier_pct.mean, 0);
  EXPECT_EQ(rows[1].barrier_pct.n, 1);
}

TEST(SeedSummaryTest, RatiosPerSeedThenMeanAndTheNoWaitJct) {
  std::vector<std::vector<experiment::RunSummary>> by_seed = {
      {Summary("SYNC", 10, 4, 3), Summary("SSP", 8, 2, 1)},
      {Summary("SYNC", 20, 8, 5), Summary("SSP", 12, 2, 2)}};
  for (auto& seed : by_seed) experiment::ComputeRatios(&seed);
  by_seed[1][1].status = Status::Internal("x");  // a failed seed is left out
  const auto rows = SummarizeSeeds(by_seed);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].jct_pct.mean, 100);
  EXPECT_DOUBLE_EQ(rows[0].no_wait_s.mean, (7 + 15) / 2.0);
  EXPECT_DOUBLE_EQ(rows[0].no_wait_pct.mean, (70 + 75) / 2.0);
  EXPECT_EQ(rows[1].seeds, 2);
  EXPECT_EQ(rows[1].failed, 1);
  EXPECT_EQ(rows[1].jct_pct.n, 1);
  EXPECT_DOUBLE_EQ(rows[1].jct_pct.mean, 80);
  EXPECT_DOUBLE_EQ(rows[1].wait_pct.mean, 50);
  EXPECT_EQ(rows[1].reached_target, 1);
  const auto j = nlohmann::json::parse(SeedJson(rows));
  EXPECT_DOUBLE_EQ(j["runs"][1]["jct_pct_of_baseline"]["mean"].get<double>(), 80);
  EXPECT_NE(SeedMarkdown("t", rows).find("| SSP | 8.00 | 80.0 |"), std::string::npos)
      << SeedMarkdown("t", rows);
  EXPECT_NE(SeedCsv(rows).find("\"SSP\",2,1,1,8,0,8,8"), std::string::npos) << SeedCsv(rows);
  EXPECT_NE(SeedTable(rows).find("no-wait JCT"), std::string::npos);
  // Barrier wait: one rank per run here, so mean = max = its hold.
  EXPECT_DOUBLE_EQ(rows[0].barrier_mean_s.mean, 4);
  EXPECT_DOUBLE_EQ(rows[0].barrier_max_s.max, 5);
  EXPECT_DOUBLE_EQ(rows[1].barrier_pct.mean, 100.0 / 3);  // 1 of SYNC's 3 (seed 1 only)
  EXPECT_DOUBLE_EQ(j["runs"][1]["barrier_wait_pct_of_baseline"]["mean"].get<double>(), 100.0 / 3);
  EXPECT_NE(SeedCsv(rows).find("barrier_pct_mean"), std::string::npos);
}

}  // namespace
}  // namespace serene::sim
