// ReorderWindow: the fast-retransmit delay learned from late replies
// (client/reorder_window.h).
#include "client/reorder_window.h"

#include <gtest/gtest.h>

namespace serene::client {
namespace {

using namespace std::chrono_literals;
using Clock = ReorderWindow::Clock;

TEST(ReorderWindowTest, IsZeroUntilReorderingIsSeen) {
  ReorderWindow w;
  EXPECT_EQ(w.Get(), Clock::duration::zero());
}

TEST(ReorderWindowTest, IsOneAndAHalfTimesTheLatestReplyOfTheLastSecondOrTwo) {
  ReorderWindow w;
  const auto t0 = Clock::now();
  w.Sample(400us, t0);
  EXPECT_EQ(w.Get(), Clock::duration(600us));
  w.Sample(2ms, t0 + 10ms);
  w.Sample(100us, t0 + 20ms);  // a smaller one does not shrink it
  EXPECT_EQ(w.Get(), Clock::duration(3ms));
  // Remembered through the next second, forgotten in the one after.
  w.Sample(100us, t0 + 1100ms);
  EXPECT_EQ(w.Get(), Clock::duration(3ms));
  w.Sample(100us, t0 + 2200ms);
  EXPECT_EQ(w.Get(), Clock::duration(150us));
}

TEST(ReorderWindowTest, StopsAtTheTimeoutsFloor) {
  ReorderWindow w;
  w.Sample(50ms, Clock::now());
  EXPECT_EQ(w.Get(), ReorderWindow::kMax);
  EXPECT_EQ(ReorderWindow::kMax, Clock::duration(10ms));
}

}  // namespace
}  // namespace serene::client
