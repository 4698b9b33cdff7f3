#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace serene::sim {
namespace {

TEST(EventQueueTest, RunsInTimeOrderAndFifoAtEqualTimes) {
  EventQueue q;
  std::vector<int> order;
  q.At(30, [&] { order.push_back(3); });
  q.At(10, [&] { order.push_back(1); });
  q.At(20, [&] { order.push_back(21); });
  q.At(20, [&] { order.push_back(22); });
  while (q.RunNext()) {
  }
  EXPECT_EQ(order, (std::vector<int>{1, 21, 22, 3}));
  EXPECT_EQ(q.now(), 30);
  EXPECT_EQ(q.executed(), 4u);
}

TEST(EventQueueTest, EventsScheduleEventsAndThePastIsClampedToNow) {
  EventQueue q;
  std::vector<SimTime> at;
  q.At(100, [&] {
    at.push_back(q.now());
    q.After(5, [&] { at.push_back(q.now()); });
    q.At(50, [&] { at.push_back(q.now()); });  // in the past: runs now, after this one
  });
  while (q.RunNext()) {
  }
  EXPECT_EQ(at, (std::vector<SimTime>{100, 100, 105}));
  EXPECT_FALSE(q.RunNext());
}

TEST(EventQueueTest, SecondsRoundTrip) {
  EXPECT_EQ(FromSeconds(1.5), 1'500'000'000);
  EXPECT_DOUBLE_EQ(ToSeconds(FromSeconds(0.25)), 0.25);
}

}  // namespace
}  // namespace serene::sim
