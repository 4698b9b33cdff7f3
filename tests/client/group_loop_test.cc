// The client's use of a reply group, case by case, against a scripted switch
// (fake_switch.h) that sends group replies to a real multicast group on the
// loopback: which READs a rank sends, and which rows it takes without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_switch.h"
#include "net/address.h"
#include "serene/client.h"

namespace serene {
namespace {

using proto::Op;
using testing::FakeSwitch;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kIncarnation = 7;
constexpr uint32_t kKey = 0xABC;

// 239.83.0.50 on a port no socket of this host holds.
proto::Endpoint TestGroup() {
  net::UdpSocketOptions o;
  o.address = "0.0.0.0";
  auto probe = net::UdpSocket::Open(o);
  EXPECT_TRUE(probe.ok());
  auto g = net::ParseHost("239.83.0.50", probe.ok() ? probe->local().port : 1);
  EXPECT_TRUE(g.ok());
  return *g;
}

std::unique_ptr<Client> Joined(const FakeSwitch& sw, uint32_t rank) {
  ClientOptions o;
  o.switch_address = sw.address();
  o.key = kKey;
  o.rank = rank;
  o.deadline = std::chrono::milliseconds(3000);
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok());
  auto info = (*c)->Join();
  EXPECT_TRUE(info.ok()) << info.status().message();
  return std::move(*c);
}

// The READs the switch saw: clock, row, flags and when.
struct ReadLog {
  std::mutex mu;
  struct Entry {
    uint32_t clock, row;
    uint16_t flags;
    Clock::time_point at;
  };
  std::vector<Entry> reads;
  void Add(const FakeSwitch::Request& r) {
    std::lock_guard<std::mutex> l(mu);
    reads.push_back({r.header.clock, r.header.row, r.header.flags, Clock::now()});
  }
  std::vector<Entry> Snapshot() {
    std::lock_guard<std::mutex> l(mu);
    return reads;
  }
};

// A handler's common part: a JOIN gets a JOIN_ACK advertising `group`, a
// READ is logged. True for a READ (the caller answers it).
bool JoinedOrRead(const FakeSwitch::Request& r, FakeSwitch::Replier& reply,
                  const proto::Endpoint& group, ReadLog* log) {
  if (r.header.op == Op::kJoin) reply.JoinAckWithGroup(r, 4, kIncarnation, group);
  if (r.header.op != Op::kRead) return false;
  log->Add(r);
  return true;
}

TEST(GroupLoop, OthersRowsThatComeThroughTheGroupAreNotRead) {
  // Rank 0 of 2, 4 rows: its share is rows 0-1. When it READs row 0 the
  // peer's READs of rows 2-3 are answered to the group too: rank 0 takes
  // them and READs neither.
  const proto::Endpoint group = TestGroup();
  ReadLog log;
  FakeSwitch sw(2, 20, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (!JoinedOrRead(r, reply, group, &log)) return;
    if (r.header.row == 0) {
      reply.GroupRow(group, r, 1, r.header.clock, 2, 3);
      reply.GroupRow(group, r, 1, r.header.clock, 3, 4);
    }
    if (r.header.flags & proto::flags::kGroup) {
      reply.GroupRow(group, r, r.header.worker, r.header.clock, r.header.row,
                     static_cast<int32_t>(r.header.row) + 1);
    } else {
      reply.ReadReply(r, static_cast<int32_t>(r.header.row) + 1);
    }
  });
  auto c = Joined(sw, 0);
  std::vector<int32_t> model(20);
  ASSERT_TRUE(c->PullFixed(model).ok());
  for (size_t i = 0; i < model.size(); ++i) EXPECT_EQ(model[i], static_cast<int32_t>(i / 5) + 1);
  for (const auto& e : log.Snapshot()) {
    EXPECT_LT(e.row, 2u) << "row " << e.row << " came through the group but was READ";
    EXPECT_TRUE(e.flags & proto::flags::kGroup) << "a first READ asks for the group";
  }
  EXPECT_EQ(c->stats().group_rows, 2u);
}

TEST(GroupLoop, GroupRowsFromAnotherSourceAreIgnored) {
  // Another process sends rows of this job (same id and key) to the group:
  // not the switch's, so rank 0 still READs rows 2-3 from its switch.
  const proto::Endpoint group = TestGroup();
  net::UdpSocketOptions o;
  o.address = "127.0.0.1";
  auto stranger = net::UdpSocket::Open(o);
  ASSERT_TRUE(stranger.ok());
  auto stranger_row = [&](uint32_t clock, uint32_t row) {
    proto::Header h;
    h.op = Op::kReadReply;
    h.job = 1;
    h.worker = 1;
    h.key = kKey;
    h.clock = clock;
    h.row = row;
    h.flags = proto::flags::kExact | proto::flags::kGroup;
    const std::vector<int32_t> values(5, 99);
    std::vector<uint8_t> bytes(proto::PacketSize(values.size()));
    proto::Encode(h, values, bytes.data());
    EXPECT_TRUE(stranger->SendTo(group, bytes).ok());
  };
  ReadLog log;
  FakeSwitch sw(2, 20, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (!JoinedOrRead(r, reply, group, &log)) return;
    if (r.header.row == 0) {
      stranger_row(r.header.clock, 2);
      stranger_row(r.header.clock, 3);
    }
    reply.GroupRow(group, r, r.header.worker, r.header.clock, r.header.row,
                   static_cast<int32_t>(r.header.row) + 1);
  });
  auto c = Joined(sw, 0);
  std::vector<int32_t> model(20);
  ASSERT_TRUE(c->PullFixed(model).ok());
  for (size_t i = 0; i < model.size(); ++i) EXPECT_EQ(model[i], static_cast<int32_t>(i / 5) + 1);
  size_t others_read = 0;
  for (const auto& e : log.Snapshot()) others_read += e.row >= 2 ? 1 : 0;
  EXPECT_GE(others_read, 2u);
  EXPECT_EQ(c->stats().group_rows, 0u);
}

TEST(GroupLoop, OthersRowsAreReadOnlyAfterTheOwnShareIsIn) {
  // Rank 0 of 2 whose peer never READs: the switch answers rank 0's share
  // 50 ms late; rows 2-3 are READ only after that, not with the first window.
  const proto::Endpoint group = TestGroup();
  ReadLog log;
  FakeSwitch sw(2, 20, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (!JoinedOrRead(r, reply, group, &log)) return;
    if (r.header.row == 1 && r.header.flags == proto::flags::kGroup) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    reply.GroupRow(group, r, r.header.worker, r.header.clock, r.header.row, 9);
  });
  auto c = Joined(sw, 0);
  std::vector<int32_t> model(20);
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(model, std::vector<int32_t>(20, 9));
  const auto reads = log.Snapshot();
  ASSERT_GE(reads.size(), 4u);
  Clock::time_point first_own = Clock::time_point::max(), first_other = first_own;
  for (const auto& e : reads) {
    auto& first = e.row < 2 ? first_own : first_other;
    first = std::min(first, e.at);
  }
  ASSERT_NE(first_other, Clock::time_point::max()) << "rows 2-3 were never READ";
  EXPECT_GE(first_other - first_own, std::chrono::milliseconds(50))
      << "the peer's rows were READ before the own share was in";
}

TEST(GroupLoop, AnOwnShareSlowedByLossDoesNotDelayTheOthersRowsAsLong) {
  // Rank 0 of 2 whose peer has left: the switch loses rank 0's READs of row 1
  // four times, so its own share takes the backoff (~0.3 s and more). The
  // peer's rows are READ within a timeout after, not after as long again
  // (which once kept a rank silent until it was evicted).
  const proto::Endpoint group = TestGroup();
  ReadLog log;
  std::atomic<int> row1_reads{0};
  std::atomic<int64_t> row1_answered_ns{0};
  FakeSwitch sw(2, 20, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (!JoinedOrRead(r, reply, group, &log)) return;
    if (r.header.row == 1) {
      if (++row1_reads <= 4) return;
      row1_answered_ns = Clock::now().time_since_epoch().count();
    }
    reply.ReadReply(r, 5);
  });
  auto c = Joined(sw, 0);
  std::vector<int32_t> model(20);
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(model, std::vector<int32_t>(20, 5));
  Clock::time_point first_own = Clock::time_point::max(), first_other = first_own;
  for (const auto& e : log.Snapshot()) {
    auto& first = e.row < 2 ? first_own : first_other;
    first = std::min(first, e.at);
  }
  ASSERT_NE(first_other, Clock::time_point::max());
  const Clock::time_point own_in{Clock::duration(row1_answered_ns.load())};
  EXPECT_LT(first_other - own_in, (own_in - first_own) / 2)
      << "the peer's rows waited as long again as the lossy own share took";
}

TEST(GroupLoop, RowsOfTheNextClockThatComeEarlyAreTakenByItsPull) {
  // Rank 1 waits for its RELEASE of clock 5 while its peer already pulls
  // clock 6: the rows come through the group before the rank's pull of 6
  // begins, and that pull sends no READ at all.
  const proto::Endpoint group = TestGroup();
  ReadLog log;
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (JoinedOrRead(r, reply, group, &log)) reply.ReadReply(r, 1);
    if (r.header.op == Op::kClock && r.header.clock == 5) {
      reply.GroupRow(group, r, 0, 6, 0, 6);
      reply.GroupRow(group, r, 0, 6, 1, 7);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      reply.Release(r, 5, 5, 5);
    }
  });
  auto c = Joined(sw, 1);
  std::vector<int32_t> model(10);
  ASSERT_TRUE(c->PullFixed(model).ok());  // clock 5
  ASSERT_TRUE(c->PushFixed(std::vector<int32_t>(10, 0)).ok());
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  const size_t reads_before = log.Snapshot().size();
  ASSERT_TRUE(c->PullFixed(model).ok());  // clock 6
  EXPECT_EQ(log.Snapshot().size(), reads_before) << "clock 6's rows were READ again";
  for (size_t i = 0; i < model.size(); ++i) EXPECT_EQ(model[i], i < 5 ? 6 : 7) << i;
}

TEST(GroupLoop, AGroupThatDeliversNothingIsLeftAfterOnePull) {
  // The switch advertises a group that never reaches the rank (it answers
  // unflagged READs only, as a rank sees a group without a multicast
  // route): the first pull recovers by re-sending, the next READs unflagged.
  const proto::Endpoint group = TestGroup();
  ReadLog log;
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (JoinedOrRead(r, reply, group, &log) && !(r.header.flags & proto::flags::kGroup)) {
      reply.ReadReply(r, 2);
    }
    if (r.header.op == Op::kClock) reply.Release(r, r.header.clock, r.header.clock, r.header.clock);
  });
  auto c = Joined(sw, 1);
  std::vector<int32_t> model(10);
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(model, std::vector<int32_t>(10, 2));
  EXPECT_GT(c->stats().read_retransmits, 0u);
  ASSERT_TRUE(c->PushFixed(std::vector<int32_t>(10, 0)).ok());
  ASSERT_TRUE(c->Clock().ok());
  const uint64_t resent = c->stats().read_retransmits;
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(c->stats().read_retransmits, resent) << "the second pull waited for the group again";
  for (const auto& e : log.Snapshot()) {
    if (e.clock == 6) {
      EXPECT_FALSE(e.flags & proto::flags::kGroup) << "row " << e.row;
    }
  }
}

}  // namespace
}  // namespace serene
