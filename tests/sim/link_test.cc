#include "sim/link.h"

#include <gtest/gtest.h>

namespace serene::sim {
namespace {

TEST(LinkTest, SerializesPacketsAtTheBandwidthThenAddsLatency) {
  LinkSpec spec;
  spec.latency_s = 10e-6;
  spec.gbps = 1;  // 1 bit per ns
  Link link(spec, 1);
  // (1000 + 66) bytes = 8528 ns on the wire, then 10 us of latency.
  auto a = link.Send(0, 1000);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, 8528 + 10'000);
  // Handed over at the same time: waits for the first to leave the link.
  auto b = link.Send(0, 1000);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, 2 * 8528 + 10'000);
  // An idle link starts at once.
  auto c = link.Send(1'000'000, 1000);
  EXPECT_EQ(*c, 1'000'000 + 8528 + 10'000);
  EXPECT_EQ(link.sent(), 3u);
  EXPECT_EQ(link.lost(), 0u);
}

TEST(LinkTest, LossIsSeededAndNearItsProbability) {
  LinkSpec spec;
  spec.loss = 0.1;
  auto run = [&](uint64_t seed) {
    Link link(spec, seed);
    std::vector<bool> lost;
    for (int i = 0; i < 10000; ++i) lost.push_back(!link.Send(i * 1000, 100).has_value());
    return lost;
  };
  const std::vector<bool> a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto n = std::count(a.begin(), a.end(), true);
  EXPECT_GT(n, 850);
  EXPECT_LT(n, 1150);
}

TEST(LinkTest, ParsesSpecsAndRefusesBadOnesWithTheField) {
  auto s = LinkSpec::Parse("latency=20us,gbps=25,loss=0.01");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->latency_s, 20e-6);
  EXPECT_DOUBLE_EQ(s->gbps, 25);
  EXPECT_DOUBLE_EQ(s->loss, 0.01);
  EXPECT_EQ(LinkSpec::Parse(s->ToString())->ToString(), s->ToString());
  auto sparse = LinkSpec::Parse(",latency=1us,,");  // empty items are skipped
  ASSERT_TRUE(sparse.ok()) << sparse.status().message();
  EXPECT_DOUBLE_EQ(sparse->latency_s, 1e-6);
  for (const char* bad : {"gbps=0", "loss=1", "loss=-0.1", "latency=fast", "speed=3", "gbps"}) {
    auto r = LinkSpec::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace serene::sim
