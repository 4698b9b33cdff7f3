// RttEstimator: RFC 6298 timeouts, the floor and the backoff (client/transport.h).
#include <gtest/gtest.h>

#include "client/transport.h"

namespace serene::client {
namespace {

using namespace std::chrono_literals;

TEST(RttEstimatorTest, StartsAtTheInitialTimeoutThenFollowsSamplesAboveTheFloor) {
  RttEstimator rtt(20ms, 1000ms);
  EXPECT_EQ(rtt.Rto(0), SteadyClock::duration(20ms));
  const auto t0 = SteadyClock::now();
  rtt.Sample(100us, t0);  // SRTT 100 us, RTTVAR 50 us: 300 us, below the 10 ms floor
  EXPECT_EQ(rtt.Rto(0), SteadyClock::duration(10ms));
  rtt.Sample(4ms, t0);  // still below: twice the longest round trip is 8 ms
  EXPECT_EQ(rtt.Rto(0), SteadyClock::duration(10ms));
}

TEST(RttEstimatorTest, TheTimeoutStaysAboveTwiceTheLongestRoundTripOfTheLastSecondOrTwo) {
  RttEstimator rtt(20ms, 1000ms);
  const auto t0 = SteadyClock::now();
  rtt.Sample(100us, t0);
  rtt.Sample(30ms, t0 + 10ms);  // a stall: a reply 30 ms late
  for (int i = 0; i < 500; ++i) rtt.Sample(100us, t0 + 20ms);  // SRTT back near 100 us
  EXPECT_GE(rtt.Rto(0), SteadyClock::duration(60ms));
  // Still remembered in the next second, forgotten in the one after.
  rtt.Sample(100us, t0 + 1100ms);
  EXPECT_GE(rtt.Rto(0), SteadyClock::duration(60ms));
  rtt.Sample(100us, t0 + 2200ms);
  EXPECT_EQ(rtt.Rto(0), SteadyClock::duration(10ms));
}

TEST(RttEstimatorTest, BacksOffPerAttemptUpToTheMaximum) {
  RttEstimator rtt(20ms, 100ms);
  EXPECT_EQ(rtt.Rto(1), SteadyClock::duration(40ms));
  EXPECT_EQ(rtt.Rto(2), SteadyClock::duration(80ms));
  EXPECT_EQ(rtt.Rto(3), SteadyClock::duration(100ms));
  EXPECT_EQ(rtt.Rto(30), SteadyClock::duration(100ms));
}

TEST(RttEstimatorTest, AJobsShapeRaisesTheFloorToTheTimeToDrainOnePushOfEveryRank) {
  ClientOptions o;
  Transport t(o, net::UdpSocket(), proto::Endpoint{}, nullptr);
  t.rtt().Sample(100us, SteadyClock::now());
  EXPECT_EQ(t.rtt().Rto(0), SteadyClock::duration(10ms));
  // 4 ranks x 25.6M elements x 4 bytes = 409.6 MB at 1 GB/s: ~410 ms more.
  t.SetJobShape(4, 25'600'000);
  EXPECT_NEAR(std::chrono::duration<double>(t.rtt().Rto(0)).count(), 0.4196, 1e-3);
  // Never past the maximum timeout (1 s by default).
  t.SetJobShape(64, 25'600'000);
  EXPECT_EQ(t.rtt().Rto(0), SteadyClock::duration(o.max_timeout));
  // A small job keeps about the 10 ms floor (plus 1.3 ms).
  t.SetJobShape(4, 79'510);
  EXPECT_LT(t.rtt().Rto(0), SteadyClock::duration(12ms));
}

}  // namespace
}  // namespace serene::client
