// The client's waiting, case by case, against a scripted switch
// (fake_switch.h): each test reproduces a way a wait used to go wrong — a
// reply taken for another request's, a loop with no way out, a clock going
// backwards — and checks the one deadline rule and the recovery paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_switch.h"
#include "serene/client.h"

namespace serene {
namespace {

using proto::ErrorCode;
using proto::Op;
using testing::FakeSwitch;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kIncarnation = 7;
constexpr uint32_t kKey = 0xABC;

ClientOptions Options(const FakeSwitch& sw, uint32_t rank,
                      std::chrono::milliseconds deadline = std::chrono::milliseconds(1500)) {
  ClientOptions o;
  o.switch_address = sw.address();
  o.job = 1;
  o.key = kKey;
  o.rank = rank;
  o.deadline = deadline;
  return o;
}

std::unique_ptr<Client> Joined(
    const FakeSwitch& sw, uint32_t rank,
    std::chrono::milliseconds deadline = std::chrono::milliseconds(1500)) {
  auto c = Client::Connect(Options(sw, rank, deadline));
  EXPECT_TRUE(c.ok());
  auto info = (*c)->Join();
  EXPECT_TRUE(info.ok()) << info.status().message();
  return std::move(*c);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Return routability (protocol.md): a switch answers a JOIN from an address
// it cannot vouch for with a COOKIE; the client JOINs again at once echoing
// it, and again when the cookie it echoed has expired (a new one comes).
TEST(ClientLoop, AJoinEchoesTheCookieThatAnsweredIt) {
  std::atomic<uint32_t> cookie{0x1234};
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op != Op::kJoin) return;
    const uint32_t want = cookie.load();
    if (r.header.clock == want && r.header.row == ~want) {
      if (want < 0x1236) {  // "expired" twice: a fresh cookie
        cookie.store(want + 1);
        reply.Send(r, Op::kCookie, want + 1, ~(want + 1), proto::cookie::FlagsFor(Op::kJoin), {});
        return;
      }
      reply.JoinAck(r, proto::kNoClock, kIncarnation);
      return;
    }
    reply.Send(r, Op::kCookie, want, ~want, proto::cookie::FlagsFor(Op::kJoin), {});
  });
  auto c = Client::Connect(Options(sw, 1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const auto start = Clock::now();
  auto info = (*c)->Join();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500)) << "no retransmission timer";
  EXPECT_EQ(sw.Count(Op::kJoin), 4u) << "the first JOIN, then one per cookie";
}

// A COOKIE that keeps coming back unchanged for the JOIN that echoed it (a
// switch that never takes it) does not make the client ping-pong: it JOINs
// again only on its timer, and fails at the deadline.
TEST(ClientLoop, AnUnchangedCookieIsNotEchoedInALoop) {
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) {
      reply.Send(r, Op::kCookie, 7, 9, proto::cookie::FlagsFor(Op::kJoin), {});
    }
  });
  auto c = Client::Connect(Options(sw, 1, std::chrono::milliseconds(600)));
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto info = (*c)->Join();
  EXPECT_FALSE(info.ok());
  EXPECT_LT(sw.Count(Op::kJoin), 40u) << "JOINs only on the retransmission timer";
}

TEST(ClientLoop, AnErrorForALateReadIsNotARefusalOfTheClock) {
  // The rank is in clock 5. While it waits after CLOCK(5), a late READ of
  // clock 5 is refused as bad_clock: that ERROR names READ, not CLOCK.
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kClock && r.header.clock == 5) {
      reply.Error(r, ErrorCode::kBadClock, Op::kRead, 5, 1);
      reply.Release(r, 5, 5, 5);
    }
  });
  auto c = Joined(sw, 1);
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_EQ(released->clock, 5u);
  EXPECT_EQ(c->clock(), 6u);
}

TEST(ClientLoop, ASwitchThatKeepsNackingEndsTheWaitWithinTheDeadline) {
  // The switch never counts this rank's INCs (it refuses them) and NACKs
  // every CLOCK: the client re-sends, then gives up with a message saying so.
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kClock) reply.Send(r, Op::kNack, r.header.clock, r.header.row, 0, {0});
  });
  auto c = Joined(sw, 1);
  ASSERT_TRUE(c->PushFixed(std::vector<int32_t>(10, 1)).ok());
  const auto start = Clock::now();
  auto released = c->Clock();
  ASSERT_FALSE(released.ok());
  EXPECT_EQ(released.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(released.status().message().find("kept NACKing CLOCK 5"), std::string::npos)
      << released.status().message();
  EXPECT_LT(Seconds(Clock::now() - start), 1.5 + 2.0);
  EXPECT_GT(sw.Count(Op::kInc), 10u) << "the rows were re-sent";
}

// A switch with the rank in clock 5 (two rows of 5 values) that NACKs every
// CLOCK until, once Record() was called, both rows were INC'd again; then it
// releases the clock.
struct NackUntilResent {
  std::atomic<bool> recording{false};
  std::mutex mu;
  std::vector<FakeSwitch::Request> resent;  // INCs since Record(), guarded by mu
  FakeSwitch sw{2, 10, 5, [this](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
                  Handle(r, reply);
                }};

  void Record() { recording = true; }
  void Handle(const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kInc && recording) {
      std::lock_guard lock(mu);
      resent.push_back(r);
    }
    if (r.header.op == Op::kClock) {
      std::lock_guard lock(mu);
      if (recording && resent.size() >= 2) {
        reply.Release(r, 5, 5, 5);
      } else {
        reply.Send(r, Op::kNack, r.header.clock, r.header.row, 0, {0});
      }
    }
  }
  // Every INC re-sent since Record() carries the update 100 + element index.
  void ExpectTheUpdateWasReSent() {
    std::lock_guard lock(mu);
    ASSERT_GE(resent.size(), 2u);
    for (const auto& inc : resent) {
      ASSERT_EQ(inc.header.clock, 5u);
      ASSERT_EQ(inc.values.size(), 5u);
      for (uint32_t i = 0; i < 5; ++i) {
        EXPECT_EQ(inc.values[i], static_cast<int32_t>(100 + inc.header.row * 5 + i))
            << "row " << inc.header.row << " value " << i;
      }
    }
  }
};

std::vector<int32_t> TheUpdate() {
  std::vector<int32_t> update(10);
  for (int i = 0; i < 10; ++i) update[static_cast<size_t>(i)] = 100 + i;
  return update;
}

TEST(ClientLoop, AClockRetriedAfterAFailedExchangeReSendsTheUpdateNotTheCallersBufferNow) {
  // ExchangeFixed re-sends NACKed INCs from the caller's update without
  // copying it. If its clock fails, the caller owns the buffer again: a
  // Clock() retried later must re-send the update that was pushed.
  NackUntilResent script;
  auto c = Joined(script.sw, 1, std::chrono::milliseconds(500));
  std::vector<int32_t> update = TheUpdate(), model(10);
  auto failed = c->ExchangeFixed(update, model);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kDeadlineExceeded);
  std::fill(update.begin(), update.end(), -9);  // the caller reuses its buffer
  script.Record();
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  script.ExpectTheUpdateWasReSent();
}

TEST(ClientLoop, ASecondPushInOneClockIsRefusedAndNacksReSendTheFirst) {
  // The switch takes one update per rank per clock. A second push in the same
  // clock — fixed point or float, alone or in an exchange, even one with a bad
  // value — is refused before anything is sent, and a NACK of the clock
  // re-sends the first push's values, unchanged by the refused calls.
  NackUntilResent script;
  FakeSwitch& sw = script.sw;
  auto c = Joined(sw, 1);
  ASSERT_TRUE(c->PushFixed(TheUpdate()).ok());
  // The fake switch counts on its own thread: wait (bounded) for both rows.
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (sw.Count(Op::kInc) < 2 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(sw.Count(Op::kInc), 2u);

  std::vector<int32_t> other(10, -7), model(10);
  std::vector<float> floats(10, 0.5f), float_model(10);
  std::vector<float> bad(10, 0.5f);
  bad[3] = std::nanf("");
  const std::vector<Status> refused = {
      c->PushFixed(other),
      c->Push(floats),
      c->Push(bad),
      c->ExchangeFixed(other, model).status(),
      c->Exchange(floats, float_model).status(),
  };
  for (const Status& s : refused) {
    EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.message();
    EXPECT_NE(s.message().find("rank 1 already pushed its update for clock 5"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("call Clock()"), std::string::npos) << s.message();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // what was sent has arrived
  EXPECT_EQ(sw.Count(Op::kInc), 2u) << "the refused pushes sent nothing";

  script.Record();
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  script.ExpectTheUpdateWasReSent();
  // The next clock takes a push again.
  EXPECT_EQ(c->clock(), 6u);
  EXPECT_TRUE(c->PushFixed(other).ok());
}

TEST(ClientLoop, ShortNacksGetAWindowOfRowsAtATimeUntilEveryRowArrived) {
  // A switch like BMv2: it keeps only the first 8 INCs of each burst (its
  // input queue overflows) and NACKs with [received] alone. Re-sending every
  // row from row 0 would deliver the same 8 rows forever; a window that moves
  // on at each NACK gets every row through.
  constexpr uint32_t kRows = 1000, kWindow = 16;
  std::vector<bool> have(kRows, false);  // the switch thread's
  uint32_t in_burst = 0;
  std::atomic<uint32_t> received{0}, largest_resend{0}, nacks{0};
  FakeSwitch sw(2, kRows, 1, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kInc) {
      if (nacks > 0) largest_resend = std::max(largest_resend.load(), in_burst + 1);
      if (in_burst++ < 8 && !have[r.header.row]) {
        have[r.header.row] = true;
        ++received;
      }
    }
    if (r.header.op == Op::kClock) {
      in_burst = 0;
      if (received < kRows) {
        ++nacks;
        reply.Send(r, Op::kNack, r.header.clock, r.header.row, 0,
                   {static_cast<int32_t>(received.load())});
      } else {
        reply.Release(r, 5, 5, 5);
      }
    }
  });
  ClientOptions o = Options(sw, 1, std::chrono::seconds(5));
  o.window = kWindow;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Join().ok());
  ASSERT_TRUE((*c)->PushFixed(std::vector<int32_t>(kRows, 1)).ok());
  auto released = (*c)->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_EQ(received, kRows);
  EXPECT_LE(largest_resend, kWindow) << "a short NACK re-sends one window of rows";
  EXPECT_GE(nacks, kRows / 8 - 1);
}

TEST(ClientLoop, OnlyRankZeroPushesAtTheSeedingClock) {
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, proto::kNoClock, kIncarnation);
  });
  auto c = Joined(sw, 1);
  Status s = c->PushFixed(std::vector<int32_t>(10, 1));
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("only rank 0"), std::string::npos) << s.message();
  EXPECT_EQ(sw.Count(Op::kInc), 0u) << "nothing sent";
}

TEST(ClientLoop, ADelayedJoinAckBehindTheRankIsIgnored) {
  // A probe's reply from long ago says done = 3; the rank is in clock 10.
  // Same incarnation: a delayed reply, not a rejoin, and the clock never
  // goes backwards.
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 9, kIncarnation);
    if (r.header.op == Op::kClock && r.header.clock == 10) {
      reply.JoinAck(r, 3, kIncarnation);
      reply.Release(r, 10, 10, 10);
    }
  });
  auto c = Joined(sw, 1);
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_EQ(released->clock, 10u);
  EXPECT_FALSE(released->rejoined);
  EXPECT_EQ(c->clock(), 11u);
}

// A fresh job on a switch that restarts at CLOCK(die_at): from then on it is
// a new incarnation that refuses the rank's requests as not_joined until it
// JOINs (with `hold`, it drops them: the rank then learns of the restart
// from a probe's JOIN_ACK), then records what each clock receives (INC
// values, rows a CLOCK announces) and releases every CLOCK.
struct RebuildScript {
  std::mutex mu;
  uint32_t die_at = 4;
  bool hold = false;
  bool restarted = false;
  bool joined_new = false;  // the rank JOINed the new incarnation
  uint32_t new_done = proto::kNoClock;                  // the new incarnation's view of the rank
  std::map<uint32_t, std::vector<int32_t>> incs;        // after the restart: clock -> values
  std::map<uint32_t, uint32_t> announced;               // after the restart: clock -> rows

  void Handle(const FakeSwitch::Request& r, FakeSwitch::Replier& reply, const FakeSwitch& sw) {
    std::lock_guard lock(mu);
    switch (r.header.op) {
      case Op::kJoin:
        if (restarted) {
          joined_new = true;
          reply.JoinAck(r, new_done, kIncarnation + 1);
        } else {
          reply.JoinAck(r, proto::kNoClock, kIncarnation);
        }
        break;
      case Op::kClock:
        if (!restarted && r.header.clock == die_at) restarted = true;  // dies with this CLOCK
        if (restarted && !joined_new) {
          if (!hold) reply.Error(r, ErrorCode::kNotJoined, Op::kClock, r.header.clock);
        } else if (!restarted) {
          reply.Release(r, r.header.clock, r.header.clock, r.header.clock);
        } else {
          announced[r.header.clock] = r.header.row;
          new_done = r.header.clock;
          reply.Release(r, r.header.clock, r.header.clock, r.header.clock);
        }
        break;
      case Op::kInc:
        if (restarted && joined_new) {
          std::vector<int32_t>& v = incs[r.header.clock];
          v.resize(sw.elements());
          std::copy(r.values.begin(), r.values.end(),
                    v.begin() + size_t{r.header.row} * sw.row_width());
        }
        break;
      default:
        break;
    }
  }
};

// `workers` ranks of 10 values in rows of 4 on a switch that restarts as above.
struct RebuildingSwitch {
  explicit RebuildingSwitch(uint32_t workers)
      : sw(workers, 10, 4, [this](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
          script.Handle(r, reply, sw);
        }) {}
  RebuildScript script;
  FakeSwitch sw;
};

std::vector<int32_t> Update(int32_t clock) {
  std::vector<int32_t> u(10);
  for (int32_t i = 0; i < 10; ++i) u[i] = clock * 100 + i;
  return u;
}

std::vector<int32_t> Sum(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out(10, 0);
  for (const auto& p : parts) {
    for (size_t i = 0; i < out.size(); ++i) out[i] += p[i];
  }
  return out;
}

// Rank `rank` seeds (rank 0), pushes Update(t) at clocks 1..4 and clocks;
// the switch restarts at CLOCK(4). Returns the ClockResult of clock 4.
Result<ClockResult> RunUntilTheRestart(Client& c, uint32_t rank) {
  if (rank == 0) {
    if (Status s = c.PushFixed(Update(-1)); !s.ok()) return s;  // the seed
  }
  Result<ClockResult> r = c.Clock();
  for (int32_t t = 1; r.ok() && t <= 4; ++t) {
    if (Status s = c.PushFixed(Update(t)); !s.ok()) return s;
    r = c.Clock();
  }
  return r;
}

TEST(ClientLoop, RankZeroRebuildsALostJobWithItsSeedAndEveryUpdateAtItsClock) {
  RebuildingSwitch rs(1);
  auto c = Joined(rs.sw, 0);
  auto released = RunUntilTheRestart(*c, 0);
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_TRUE(released->switch_restarted);
  EXPECT_EQ(released->clock, 4u) << "the clock goes on, it does not start again";
  EXPECT_EQ(c->clock(), 5u);
  EXPECT_EQ(c->info().incarnation, kIncarnation + 1);
  EXPECT_EQ(c->stats().switch_restarts, 1u);
  std::lock_guard lock(rs.script.mu);
  // Clock 0: the seed and the updates of the released clocks 1..3 (the
  // fold); 1..3: nothing; 4: the update in flight.
  EXPECT_EQ(rs.script.incs[0], Sum({Update(-1), Update(1), Update(2), Update(3)}));
  EXPECT_EQ(rs.script.incs.count(1), 0u);
  EXPECT_EQ(rs.script.incs.count(3), 0u);
  EXPECT_EQ(rs.script.incs[4], Update(4));
  const std::map<uint32_t, uint32_t> rows = {{0, 3}, {1, 0}, {2, 0}, {3, 0}, {4, 3}};
  EXPECT_EQ(rs.script.announced, rows) << "every clock CLOCKed again, at its own number";
}

TEST(ClientLoop, AnotherRankPutsItsFoldAtClockOneAndLearnsOfTheLossFromAProbe) {
  // Rank 1 waits after CLOCK(4) with no reply (the barrier holds it); its
  // probe's JOIN_ACK shows a new incarnation with the rank at clock -1.
  RebuildingSwitch rs(2);
  rs.script.hold = true;
  auto c = Joined(rs.sw, 1, std::chrono::milliseconds(2000));
  auto released = RunUntilTheRestart(*c, 1);
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_TRUE(released->switch_restarted);
  EXPECT_EQ(released->clock, 4u);
  EXPECT_EQ(c->clock(), 5u);
  std::lock_guard lock(rs.script.mu);
  EXPECT_EQ(rs.script.incs.count(0), 0u) << "only rank 0 INCs at the seeding clock";
  EXPECT_EQ(rs.script.incs[1], Sum({Update(1), Update(2), Update(3)}));
  EXPECT_EQ(rs.script.incs.count(3), 0u);
  EXPECT_EQ(rs.script.incs[4], Update(4));
  const std::map<uint32_t, uint32_t> rows = {{0, 0}, {1, 3}, {2, 0}, {3, 0}, {4, 3}};
  EXPECT_EQ(rs.script.announced, rows);
}

TEST(ClientLoop, APullInterruptedByARestartReadsTheRebuiltModelAtTheSameClock) {
  // The switch restarts after CLOCK(2) was released: the pull of clock 3 is
  // refused as not_joined; the rank rebuilds clocks 0..2 and pulls clock 3.
  std::mutex mu;
  bool restarted = false;
  std::vector<uint32_t> clocks_after;  // CLOCKs the new incarnation saw
  uint32_t new_done = proto::kNoClock;
  FakeSwitch sw(1, 10, 4, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    std::lock_guard lock(mu);
    switch (r.header.op) {
      case Op::kJoin:
        reply.JoinAck(r, restarted ? new_done : proto::kNoClock,
                      restarted ? kIncarnation + 1 : kIncarnation);
        break;
      case Op::kClock:
        if (restarted) {
          clocks_after.push_back(r.header.clock);
          new_done = r.header.clock;
        }
        reply.Release(r, r.header.clock, r.header.clock, r.header.clock);
        if (r.header.clock == 2) restarted = true;
        break;
      case Op::kRead:
        if (restarted && new_done != 2) {
          reply.Error(r, ErrorCode::kNotJoined, Op::kRead, r.header.clock);
        } else {
          reply.ReadReply(r, 9);
        }
        break;
      default:
        break;
    }
  });
  auto c = Joined(sw, 0);
  ASSERT_TRUE(c->PushFixed(Update(-1)).ok());
  for (int32_t t = 0; t <= 2; ++t) {
    if (t > 0) {
      ASSERT_TRUE(c->PushFixed(Update(t)).ok());
    }
    ASSERT_TRUE(c->Clock().ok());
  }
  std::vector<int32_t> model(10);
  Status pulled = c->PullFixed(model);
  ASSERT_TRUE(pulled.ok()) << pulled.message();
  EXPECT_EQ(model, std::vector<int32_t>(10, 9)) << "the new incarnation's model";
  EXPECT_EQ(c->clock(), 3u);
  EXPECT_EQ(c->stats().switch_restarts, 1u);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(clocks_after, (std::vector<uint32_t>{0, 1, 2})) << "clocks 0..2 rebuilt";
  }
  ASSERT_TRUE(c->PushFixed(Update(3)).ok());
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_EQ(released->clock, 3u);
  EXPECT_TRUE(released->switch_restarted) << "reported by the next Clock()";
}

TEST(ClientLoop, ARankThatJoinedAnOngoingJobCannotRebuildItAndSaysWhy) {
  // The rank's process joined at clock 5: it holds none of its rank's earlier
  // updates, so it fails instead of rebuilding a model with a hole.
  std::atomic<bool> restarted{false};
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) {
      if (restarted) {
        reply.JoinAck(r, proto::kNoClock, kIncarnation + 1);
      } else {
        reply.JoinAck(r, 4, kIncarnation);
      }
    }
    if (r.header.op == Op::kClock && r.header.clock == 5) {
      restarted = true;
      reply.Error(r, ErrorCode::kNotJoined, Op::kClock, r.header.clock);
    }
  });
  auto c = Joined(sw, 1);
  auto released = c->Clock();
  ASSERT_FALSE(released.ok());
  EXPECT_EQ(released.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(released.status().message().find("joined the job at clock 5"), std::string::npos)
      << released.status().message();
  EXPECT_NE(released.status().message().find("cannot rebuild it exactly"), std::string::npos)
      << released.status().message();
}

TEST(ClientLoop, JoinWaitsWhileTheRankIsStillBoundElsewhereThenSucceeds) {
  const auto start = Clock::now();
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op != Op::kJoin) return;
    if (Clock::now() - start < std::chrono::milliseconds(400)) {
      reply.Error(r, static_cast<ErrorCode>(11), Op::kJoin, 0);  // rank_in_use
    } else {
      reply.JoinAck(r, 4, kIncarnation);
    }
  });
  auto c = Client::Connect(Options(sw, 1));
  ASSERT_TRUE(c.ok());
  auto info = (*c)->Join();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_GT(sw.Count(Op::kJoin), 1u);
}

TEST(ClientLoop, JoinOfARankBoundElsewhereFailsWithinTheDeadlineSayingWhy) {
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.Error(r, static_cast<ErrorCode>(11), Op::kJoin, 0);
  });
  auto c = Client::Connect(Options(sw, 1));
  ASSERT_TRUE(c.ok());
  const auto start = Clock::now();
  auto info = (*c)->Join();
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("still live"), std::string::npos)
      << info.status().message();
  EXPECT_LT(Seconds(Clock::now() - start), 1.5 + 2.0);
}

TEST(ClientLoop, ASilentSwitchFailsEveryCallWithinTheDeadline) {
  FakeSwitch sw(2, 10, 5, [](const FakeSwitch::Request&, FakeSwitch::Replier&) {});
  auto c = Client::Connect(Options(sw, 1));
  ASSERT_TRUE(c.ok());
  const auto start = Clock::now();
  auto info = (*c)->Join();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(info.status().message().find("did not answer JOIN"), std::string::npos);
  EXPECT_LT(Seconds(Clock::now() - start), 1.5 + 2.0);
}

TEST(ClientLoop, ASwitchThatDiesDuringAPullIsReportedWithinTheDeadline) {
  std::atomic<int> reads{0};
  FakeSwitch sw(2, 20, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kRead && reads++ < 2) reply.ReadReply(r, 1);  // then silence
  });
  auto c = Joined(sw, 1);
  std::vector<int32_t> model(20);
  const auto start = Clock::now();
  Status s = c->PullFixed(model);
  EXPECT_EQ(s.code(), Status::Code::kDeadlineExceeded) << s.message();
  EXPECT_NE(s.message().find("did not answer READ (2 rows, clock 5)"), std::string::npos)
      << s.message();
  EXPECT_LT(Seconds(Clock::now() - start), 1.5 + 2.0);
  EXPECT_GT(c->stats().read_retransmits, 0u);
}

// A pull of 100 rows of one value by rank 1: READs leave rows 50..99, then
// 0..49, all in one window.
constexpr uint32_t kPullRows = 100;
constexpr uint32_t kLastSent = 49;

// Rank 1's pull from `sw`, which answers every row with `value`; returns the
// client for its stats.
std::unique_ptr<Client> PullsEveryRow(const FakeSwitch& sw, int32_t value) {
  auto c = Joined(sw, 1);
  std::vector<int32_t> model(kPullRows);
  Status s = c->PullFixed(model);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(model, std::vector<int32_t>(kPullRows, value));
  return c;
}

TEST(ClientLoop, AStalledSwitchCostsOneReadPerTimeoutNotAWindow) {
  // The switch stops for 300 ms (a process not scheduled) with the whole
  // window queued, then answers every READ in order. Every row times out,
  // none was lost: re-sending the window (every ~20-160 ms) would double the
  // switch's backlog each time; a probe per timeout costs a handful.
  bool stalled = false;  // the switch thread's
  FakeSwitch sw(2, kPullRows, 1, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op == Op::kRead) {
      if (!stalled) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stalled = true;
      reply.ReadReply(r, 3);
    }
  });
  auto c = PullsEveryRow(sw, 3);
  EXPECT_GE(c->stats().read_retransmits, 1u) << "the rows did time out";
  EXPECT_LE(c->stats().read_retransmits, 8u) << "one probe per timeout, not the window";
}

TEST(ClientLoop, RowsLostTogetherAreReSentOnceTheNewestIsAnswered) {
  // The first copies of the last 30 READs sent are lost. They time out
  // together: the newest (row 49) is re-sent alone; its reply proves the
  // other 29 lost (the switch answers in order), and they follow.
  std::mutex mu;
  std::vector<uint32_t> resent;           // rows of re-sent READs, in arrival order
  size_t resent_when_probe_answered = 0;  // re-sent READs seen when row 49 was answered
  FakeSwitch sw(2, kPullRows, 1, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) reply.JoinAck(r, 4, kIncarnation);
    if (r.header.op != Op::kRead) return;
    const bool retransmit = (r.header.flags & proto::flags::kRetransmit) != 0;
    std::lock_guard<std::mutex> lock(mu);
    if (retransmit) resent.push_back(r.header.row);
    if (!retransmit && r.header.row >= kLastSent - 29 && r.header.row <= kLastSent) return;
    if (r.header.row == kLastSent) resent_when_probe_answered = resent.size();
    reply.ReadReply(r, 2);
  });
  PullsEveryRow(sw, 2);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(resent.empty());
  EXPECT_EQ(resent.front(), kLastSent) << "the newest row that timed out is the probe";
  EXPECT_EQ(resent_when_probe_answered, 1u) << "nothing else re-sent before the probe's reply";
  EXPECT_GE(resent.size(), 30u) << "every lost row re-sent";
  EXPECT_LE(resent.size(), 40u);
}

}  // namespace
}  // namespace serene
