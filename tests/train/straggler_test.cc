#include "train/straggler.h"

#include <gtest/gtest.h>

#include <cmath>

namespace serene::train {
namespace {

StragglerSpec Parse(const std::string& text) {
  Result<StragglerSpec> r = ParseStragglerSpec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : StragglerSpec();
}

TEST(StragglerSpecTest, ParsesEveryFormWithDefaults) {
  StragglerSpec s = Parse("slow_worker");
  EXPECT_EQ(s.kind, StragglerKind::kSlowWorker);
  EXPECT_DOUBLE_EQ(s.probability, 0.15);
  EXPECT_DOUBLE_EQ(s.min_factor, 0.5);
  EXPECT_DOUBLE_EQ(s.max_factor, 2.0);
  s = Parse("slow_worker:0.3:1:4");
  EXPECT_DOUBLE_EQ(s.probability, 0.3);
  EXPECT_DOUBLE_EQ(s.min_factor, 1.0);
  EXPECT_DOUBLE_EQ(s.max_factor, 4.0);
  s = Parse("failure");
  EXPECT_EQ(s.kind, StragglerKind::kFailure);
  EXPECT_DOUBLE_EQ(s.probability, 0.01);
  EXPECT_DOUBLE_EQ(s.duration_s, 240);
  s = Parse("failure:0.05:30");
  EXPECT_DOUBLE_EQ(s.duration_s, 30);
  s = Parse("heterogeneous:2.5");
  EXPECT_EQ(s.kind, StragglerKind::kHeterogeneous);
  EXPECT_DOUBLE_EQ(s.factor, 2.5);
  EXPECT_EQ(s.from_iteration, 0);
  EXPECT_EQ(Parse("heterogeneous:2:300").from_iteration, 300);
  EXPECT_EQ(Parse("heterogeneous:2:300").until_iteration, 0);
  EXPECT_EQ(Parse("heterogeneous:2:100:250").until_iteration, 250);
  EXPECT_EQ(Parse("none").kind, StragglerKind::kNone);
}

TEST(StragglerSpecTest, ToStringRoundTrips) {
  for (const char* text :
       {"none", "slow_worker:0.15:0.5:2", "failure:0.01:240", "heterogeneous:1.5",
        "heterogeneous:2:300", "heterogeneous:2:0:40", "heterogeneous:2:100:250"}) {
    EXPECT_EQ(Parse(text).ToString(), text);
  }
}

TEST(StragglerSpecTest, RejectsBadPatterns) {
  for (const char* text : {"slow", "slow_worker:x", "slow_worker:1.5", "slow_worker:0.1:2:1",
                           "slow_worker:0.1:1:2:3", "failure:0.1:-1", "heterogeneous",
                           "heterogeneous:0.5", "heterogeneous:2:-1", "heterogeneous:2:1.5",
                           "heterogeneous:2:3:3", "heterogeneous:2:3:2", "heterogeneous:2:3:4.5",
                           "heterogeneous:2:3:4:5", "none:1", "slow_worker:"}) {
    Result<StragglerSpec> r = ParseStragglerSpec(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(text), std::string::npos);
    }
  }
}

TEST(RankListTest, Parses) {
  EXPECT_EQ(*ParseRankList("1,3", 4), (std::vector<int>{1, 3}));
  EXPECT_EQ(*ParseRankList("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(ParseRankList("", 3)->empty());
  EXPECT_TRUE(ParseRankList("none", 3)->empty());
  EXPECT_FALSE(ParseRankList("4", 4).ok());
  EXPECT_FALSE(ParseRankList("1,1", 4).ok());
  EXPECT_FALSE(ParseRankList("a", 4).ok());
  EXPECT_FALSE(ParseRankList("1,", 4).ok());
  EXPECT_FALSE(ParseRankList("-1", 4).ok());
}

TEST(StragglerInjectorTest, NoneNeverSleeps) {
  StragglerInjector s(StragglerSpec(), 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.NextDelay(0.01), 0.0);
  EXPECT_EQ(s.delayed_iterations(), 0);
}

TEST(StragglerInjectorTest, SlowWorkerHitsWithProbabilityPWithinBounds) {
  const StragglerSpec spec = Parse("slow_worker:0.15:0.5:2.0");
  for (uint64_t seed : {1u, 2u, 3u}) {
    StragglerInjector s(spec, StragglerSeed(seed, 0));
    constexpr int kIterations = 20000;
    int hits = 0;
    double min_ratio = 1e9, max_ratio = 0, ratio_sum = 0;
    for (int i = 0; i < kIterations; ++i) {
      // Compute times alternate between 10 and 30 ms: mean -> 20 ms.
      const double compute = (i % 2 == 0) ? 0.010 : 0.030;
      const double delay = s.NextDelay(compute);
      EXPECT_NEAR(s.mean_compute_s(),
                  (i % 2 == 0) ? 0.020 * i / (i + 1.0) + 0.010 / (i + 1.0) : 0.020, 1e-12);
      if (delay > 0) {
        ++hits;
        const double ratio = delay / s.mean_compute_s();
        min_ratio = std::min(min_ratio, ratio);
        max_ratio = std::max(max_ratio, ratio);
        ratio_sum += ratio;
      }
    }
    // Binomial(20000, 0.15): sd ~ 50, so +-0.01 is ~4 sd.
    EXPECT_NEAR(hits / static_cast<double>(kIterations), 0.15, 0.01) << "seed " << seed;
    EXPECT_EQ(s.delayed_iterations(), hits);
    EXPECT_GE(min_ratio, 0.5);
    EXPECT_LE(max_ratio, 2.0);
    EXPECT_LT(min_ratio, 0.55);  // the whole range is used
    EXPECT_GT(max_ratio, 1.95);
    EXPECT_NEAR(ratio_sum / hits, 1.25, 0.05);  // mean of U(0.5, 2.0)
  }
}

TEST(StragglerInjectorTest, SameSeedSameScheduleDifferentRanksDiffer) {
  const StragglerSpec spec = Parse("slow_worker");
  StragglerInjector a(spec, StragglerSeed(5, 1)), b(spec, StragglerSeed(5, 1)),
      c(spec, StragglerSeed(5, 2));
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const double da = a.NextDelay(0.01);
    EXPECT_EQ(da, b.NextDelay(0.01));
    if (da != c.NextDelay(0.01)) ++differ;
  }
  EXPECT_GT(differ, 50);
}

TEST(StragglerInjectorTest, FailureHappensAtMostOnce) {
  int runs_that_failed = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    StragglerInjector s(Parse("failure:0.01:240"), StragglerSeed(seed, 0));
    int failures = 0;
    for (int i = 0; i < 1000; ++i) {
      const double d = s.NextDelay(0.02);
      if (d > 0) {
        EXPECT_DOUBLE_EQ(d, 240.0);
        ++failures;
      }
    }
    EXPECT_LE(failures, 1);
    EXPECT_EQ(s.failed(), failures == 1);
    runs_that_failed += failures;
  }
  // P(no failure in 1000 iterations at p=0.01) = 0.99^1000 ~ 4e-5.
  EXPECT_GE(runs_that_failed, 195);

  // With p = 1 it fails on the first iteration, then never again.
  StragglerInjector certain(Parse("failure:1:5"), 1);
  EXPECT_DOUBLE_EQ(certain.NextDelay(0.1), 5.0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(certain.NextDelay(0.1), 0.0);
  EXPECT_EQ(certain.delayed_iterations(), 1);
}

TEST(StragglerInjectorTest, HeterogeneousScalesEachIteration) {
  StragglerInjector s(Parse("heterogeneous:3"), 1);
  EXPECT_DOUBLE_EQ(s.NextDelay(0.010), 0.020);
  EXPECT_DOUBLE_EQ(s.NextDelay(0.050), 0.100);
  EXPECT_DOUBLE_EQ(s.NextDelay(0.0), 0.0);
  EXPECT_EQ(s.delayed_iterations(), 3);
  EXPECT_NEAR(s.total_delay_s(), 0.120, 1e-12);
  StragglerInjector unit(Parse("heterogeneous:1"), 1);
  EXPECT_EQ(unit.NextDelay(0.5), 0.0);
  EXPECT_EQ(unit.delayed_iterations(), 0);
}

TEST(StragglerInjectorTest, HeterogeneousFromAnIterationOn) {
  StragglerInjector s(Parse("heterogeneous:2:2"), 1);
  EXPECT_EQ(s.NextDelay(0.010), 0.0);  // iterations 0 and 1 at full speed
  EXPECT_EQ(s.NextDelay(0.010), 0.0);
  EXPECT_DOUBLE_EQ(s.NextDelay(0.010), 0.010);  // iteration 2 on: twice as slow
  EXPECT_DOUBLE_EQ(s.NextDelay(0.030), 0.030);
  EXPECT_EQ(s.delayed_iterations(), 2);
  StragglerInjector unit(Parse("heterogeneous:1:5"), 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(unit.NextDelay(0.5), 0.0);
  EXPECT_EQ(unit.NextDelay(0.5), 0.0);
  EXPECT_EQ(unit.delayed_iterations(), 0);
}

// A straggler that comes and goes: slow for iterations [from, until) only.
TEST(StragglerInjectorTest, HeterogeneousUntilAnIteration) {
  StragglerInjector s(Parse("heterogeneous:3:1:3"), 1);
  EXPECT_EQ(s.NextDelay(0.010), 0.0);             // iteration 0: full speed
  EXPECT_DOUBLE_EQ(s.NextDelay(0.010), 0.020);    // 1 and 2: three times slower
  EXPECT_DOUBLE_EQ(s.NextDelay(0.010), 0.020);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.NextDelay(0.010), 0.0) << i;  // 3 on: full speed
  EXPECT_EQ(s.delayed_iterations(), 2);
}

}  // namespace
}  // namespace serene::train
