// The client's waiting, case by case, against a scripted switch
// (fake_switch.h): each test reproduces a way a wait used to go wrong — a
// reply taken for another request's, a loop with no way out, a clock going
// backwards — and checks the one deadline rule and the recovery paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
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

// A switch that restarts while rank 0 waits after CLOCK(5): it no longer
// knows the rank (not_joined), and its job is a new incarnation at clock 0.
struct RestartScript {
  std::mutex mu;
  bool restarted = false;
  std::vector<int32_t> seed;  // what rank 0 INC'd at clock 0 after the restart
  bool released0 = false;
  int32_t value = 42;  // every READ_REPLY's values

  void Handle(const FakeSwitch::Request& r, FakeSwitch::Replier& reply, const FakeSwitch& sw) {
    std::lock_guard lock(mu);
    switch (r.header.op) {
      case Op::kJoin:
        if (restarted) {
          reply.JoinAck(r, released0 ? 0 : proto::kNoClock, kIncarnation + 1);
        } else {
          reply.JoinAck(r, 4, kIncarnation);
        }
        break;
      case Op::kRead:
        reply.ReadReply(r, value);
        break;
      case Op::kClock:
        if (!restarted) {
          restarted = true;  // the old switch dies with this CLOCK
          reply.Error(r, ErrorCode::kNotJoined, Op::kClock, r.header.clock);
        } else if (r.header.clock == 0 && seed.size() == sw.elements()) {
          released0 = true;
          reply.Release(r, 0, 0, 0);
        } else if (r.header.clock == 0) {
          reply.Send(r, Op::kNack, 0, r.header.row, 0, {0});
        }
        break;
      case Op::kInc:
        if (restarted && r.header.clock == 0) {
          const size_t begin = size_t{r.header.row} * sw.row_width();
          if (seed.size() < begin + r.values.size()) seed.resize(begin + r.values.size());
          std::copy(r.values.begin(), r.values.end(), seed.begin() + begin);
        }
        break;
      default:
        break;
    }
  }
};

// One rank of 10 values in rows of 4 on a switch that restarts as above.
struct RestartingSwitch {
  RestartScript script;
  FakeSwitch sw{1, 10, 4, [this](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
                  script.Handle(r, reply, sw);
                }};
};

TEST(ClientLoop, RankZeroReSeedsASwitchThatLostTheJobWithTheNewestModelItPulled) {
  RestartingSwitch rs;
  RestartScript& script = rs.script;
  auto c = Joined(rs.sw, 0);
  std::vector<int32_t> model(10);
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(model, std::vector<int32_t>(10, 42));
  {
    std::lock_guard lock(script.mu);
    script.value = 7;
  }
  ASSERT_TRUE(c->PullFixed(model).ok());
  EXPECT_EQ(model, std::vector<int32_t>(10, 7));
  // The caller owns its buffer: what it writes there is not the seed.
  std::fill(model.begin(), model.end(), -1);
  ASSERT_TRUE(c->PushFixed(std::vector<int32_t>(10, 1)).ok());
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_TRUE(released->switch_restarted);
  EXPECT_EQ(released->clock, 0u) << "the clock started again";
  EXPECT_EQ(c->clock(), 1u);
  EXPECT_EQ(c->info().incarnation, kIncarnation + 1);
  EXPECT_EQ(c->stats().switch_restarts, 1u);
  std::lock_guard lock(script.mu);
  EXPECT_EQ(script.seed, std::vector<int32_t>(10, 7)) << "re-seeded with the newest pulled model";
}

TEST(ClientLoop, RankZeroReSeedsWithTheNewestModelPulledAsFloats) {
  RestartingSwitch rs;
  RestartScript& script = rs.script;
  auto c = Joined(rs.sw, 0);
  std::vector<float> model(10);
  ASSERT_TRUE(c->Pull(model).ok());
  {
    std::lock_guard lock(script.mu);
    script.value = 7;
  }
  ASSERT_TRUE(c->Pull(model).ok());
  const float seven = std::ldexp(7.0f, -static_cast<int>(c->info().scale_log2));
  EXPECT_EQ(model, std::vector<float>(10, seven));
  std::fill(model.begin(), model.end(), 0.0f);
  ASSERT_TRUE(c->PushFixed(std::vector<int32_t>(10, 1)).ok());
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_TRUE(released->switch_restarted);
  std::lock_guard lock(script.mu);
  EXPECT_EQ(script.seed, std::vector<int32_t>(10, 7)) << "re-seeded with the newest pulled model";
}

TEST(ClientLoop, AnotherRankLearnsOfALostJobFromAProbeAndCompletesClockZeroAgain) {
  // Rank 1 waits after CLOCK(5) (no reply: the barrier holds it); its probe's
  // JOIN_ACK shows a new incarnation at clock -1.
  std::atomic<bool> restarted{false};
  FakeSwitch sw(2, 10, 5, [&](const FakeSwitch::Request& r, FakeSwitch::Replier& reply) {
    if (r.header.op == Op::kJoin) {
      if (restarted) {
        reply.JoinAck(r, proto::kNoClock, kIncarnation + 1);
      } else {
        reply.JoinAck(r, 4, kIncarnation);
      }
    }
    if (r.header.op == Op::kClock && r.header.clock == 5) restarted = true;
    if (r.header.op == Op::kClock && r.header.clock == 0 && restarted) reply.Release(r, 0, 0, 0);
  });
  auto c = Joined(sw, 1, std::chrono::milliseconds(2000));
  auto released = c->Clock();
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_TRUE(released->switch_restarted);
  EXPECT_EQ(c->clock(), 1u);
  EXPECT_EQ(sw.Count(Op::kInc), 0u) << "only rank 0 re-seeds";
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
