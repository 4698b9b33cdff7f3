// Who may send what (docs/security.md): a live rank cannot be taken over
// from another address (rank_in_use), only a live rank's LEAVE ends the job
// (finish_not_live), the job's source allow-list (source_not_allowed), and
// the switch address each emitted packet leaves from (replies from the
// request's destination, other RELEASEs from the address the rank's JOIN
// reached).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <memory>

#include "dataplane/join_cookie.h"
#include "dataplane/pipeline.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::JobConfig;
using dataplane::Verdict;
using proto::ErrorCode;
using proto::Op;

JobConfig Job(uint32_t workers) { return TestJob(workers, BarrierParams::Sync(), 6, 3); }

int32_t CodeOf(const Emitted& e) { return e.values.at(proto::error_reply::kCode); }

proto::Endpoint V6(std::initializer_list<uint8_t> head, uint16_t port = 40000) {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv6;
  size_t i = 0;
  for (uint8_t b : head) e.addr[i++] = b;
  e.addr[15] = 1;
  e.port = port;
  return e;
}

proto::Endpoint V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port = 40000) {
  proto::Endpoint e = SwitchAddr(a, b, c, d);
  e.port = port;
  return e;
}

// --- Rank binding ---

TEST(RankBinding, ALiveRankCannotBeTakenOverFromAnotherAddress) {
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  const proto::Endpoint intruder = WorkerAddr(0, 50000);

  dataplane::ProcessResult r;
  auto e = h.JoinFrom(0, intruder, &r);
  EXPECT_EQ(r.verdict, Verdict::kRefused);
  EXPECT_EQ(r.reason, DropReason::kRankInUse);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kError);
  EXPECT_EQ(e[0].dst, intruder);
  EXPECT_EQ(CodeOf(e[0]), static_cast<int32_t>(ErrorCode::kRankInUse));
  EXPECT_EQ(e[0].values[proto::error_reply::kOp], static_cast<int32_t>(Op::kJoin));
  EXPECT_FALSE(e[0].header.flags & proto::flags::kEvicted);

  auto t = h.Telemetry();
  EXPECT_EQ(t.workers[0].addr, WorkerAddr(0)) << "the binding did not move";
  EXPECT_EQ(t.workers[0].counters.joins, 1u);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kRankInUse)], 1u);
  // The real rank goes on as if nothing happened; the intruder gets nothing.
  auto row = h.Read(0, 1, 0);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->header.op, Op::kReadReply);
  h.SendRaw(h.Req(Op::kRead, 0).Clock(1).Row(0).Build(), intruder, &r);
  EXPECT_EQ(r.reason, DropReason::kWrongSource);
}

TEST(RankBinding, ARefusedJoinDoesNotKeepADeadBindingAlive) {
  // A restarted worker (new port) retries JOIN while its old binding is
  // live: the retries must not refresh the old binding's last_seen, or the
  // silence evictor would never free the rank for it.
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  const proto::Endpoint restarted = WorkerAddr(0, 50000);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  for (int i = 0; i < 5; ++i) {
    h.now += 400;
    dataplane::ProcessResult r;
    h.JoinFrom(0, restarted, &r);
    EXPECT_EQ(r.reason, DropReason::kRankInUse);
  }
  auto evicted = h.pipeline().EvictIfSilent(1, 0, /*silent_ns=*/2000, h.now, &out);
  ASSERT_TRUE(evicted.ok());
  EXPECT_TRUE(*evicted) << "silent since its last own packet, 2000 ns ago";
  auto ack = h.JoinFrom(0, restarted);
  ASSERT_EQ(OfOp(ack, Op::kJoinAck).size(), 1u);
  EXPECT_EQ(OfOp(ack, Op::kJoinAck)[0].dst, restarted);
  EXPECT_EQ(h.Telemetry().workers[0].addr, restarted);
  EXPECT_TRUE(h.Telemetry().workers[0].live);
}

TEST(RankBinding, ARankThatLeftMayJoinFromAnotherAddress) {
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  auto bye = h.Send(h.Req(Op::kLeave, 1), 1);
  ASSERT_EQ(OfOp(bye, Op::kLeave).size(), 1u);
  auto ack = h.JoinFrom(1, WorkerAddr(1, 50000));
  ASSERT_EQ(OfOp(ack, Op::kJoinAck).size(), 1u);
  dataplane::ProcessResult r;
  h.Send(h.Req(Op::kRead, 1).Clock(0).Row(0), 1, &r);
  EXPECT_EQ(r.reason, DropReason::kWrongSource) << "the old address lost the rank";
}

TEST(RankBinding, AJoinFromTheBoundAddressIsIdempotent) {
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  auto again = h.Join(0);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].header.op, Op::kJoinAck);
  EXPECT_EQ(again[0].values[proto::join_ack::kDone], 0);
  auto t = h.Telemetry();
  EXPECT_EQ(t.workers[0].counters.joins, 2u);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kRankInUse)], 0u);
}

// --- Return routability (docs/protocol.md): no reflection ---

// A key holder forges a victim's address: JOINs of a rank that never joined
// and of a live one, JOINs with guessed cookies, READs, CLOCKs, LEAVEs and
// INCs. The victim gets at most one 24-byte COOKIE per request — never more
// bytes than the forger sent — and no rank is bound to it.
TEST(Reflection, AnUnboundSourceGetsNoMoreBytesThanItSent) {
  Harness h;
  h.CreateJob(TestJob(3, BarrierParams::Sync(), 3 * 256, 256));  // READ_REPLY: 1048 bytes
  h.JoinAll(2);                                                  // rank 2 never joins
  h.Seed(std::vector<int32_t>(3 * 256, 1));
  const proto::Endpoint victim = V4(192, 0, 2, 1, 9);
  const uint64_t cookie_drops_before =
      h.Telemetry().counters.drops[static_cast<size_t>(DropReason::kJoinCookie)];
  std::vector<std::vector<uint8_t>> forged;
  for (uint16_t w : {0, 1, 2}) {
    forged.push_back(h.Req(Op::kJoin, w).Build());
    for (uint32_t guess : {1u, 0xDEADBEEFu}) {
      forged.push_back(h.Req(Op::kJoin, w).Clock(guess).Row(guess * 7).Build());
    }
    forged.push_back(h.Req(Op::kRead, w).Clock(1).Row(0).Flags(proto::flags::kGroup).Build());
    forged.push_back(h.Req(Op::kClock, w).Clock(1).Row(3).Build());
    forged.push_back(h.Req(Op::kLeave, w).Flags(proto::flags::kFinished).Build());
    forged.push_back(
        h.Req(Op::kInc, w).Clock(1).Row(0).Values(std::vector<int32_t>(256, 5)).Build());
  }
  uint64_t sent_bytes = 0, got_bytes = 0, got_packets = 0;
  for (int round = 0; round < 10; ++round) {
    for (const auto& d : forged) {
      sent_bytes += d.size();
      for (const Emitted& e : h.SendRaw(d, victim)) {
        ASSERT_EQ(e.dst, victim);
        EXPECT_EQ(e.header.op, Op::kCookie);
        got_bytes += proto::PacketSize(e.values.size());
        ++got_packets;
      }
    }
  }
  const double amplification = static_cast<double>(got_bytes) / static_cast<double>(sent_bytes);
  std::cout << "amplification toward an unbound source: " << got_bytes << " / " << sent_bytes
            << " bytes = " << amplification << ", " << got_packets << " packets for "
            << 10 * forged.size() << " requests\n";
  EXPECT_LE(amplification, 1.0);
  EXPECT_LE(got_packets, 10 * forged.size());
  auto t = h.Telemetry();
  for (const auto& w : t.workers) {
    EXPECT_FALSE(w.addr == victim) << "rank " << w.rank << " bound to the victim";
    EXPECT_EQ(w.counters.reads, 0u);
  }
  EXPECT_FALSE(t.workers[2].joined);
  EXPECT_FALSE(t.finished);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kJoinCookie)] - cookie_drops_before,
            10u * 9);
}

// A key holder's JOIN without a cookie changes nothing (it is answered with
// a COOKIE), so it is answered under the job's shared lock, beside the
// INC/READ bursts that hold it: no exclusive hold for a flood of them. A
// rank's own live address re-JOINs without a cookie, and that JOIN (which
// may change state) still waits for the lock exclusive.
TEST(Reflection, ACookieLessJoinIsAnsweredWithoutTheExclusiveLock) {
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4, 5, 6});
  const uint64_t drops_before =
      h.Telemetry().counters.drops[static_cast<size_t>(DropReason::kJoinCookie)];
  // Another switch thread's burst: after a READ it holds the job's lock
  // shared until it ends.
  const std::vector<uint8_t> read = h.Req(Op::kRead, 0).Clock(1).Row(0).Build();
  dataplane::Output burst_out = dataplane::Output::ForBatch(4);
  auto burst = std::make_unique<dataplane::Pipeline::Burst>(h.pipeline());
  ASSERT_EQ(burst->Process(read, WorkerAddr(0), {}, h.now, &burst_out).verdict, Verdict::kReplied);

  const std::vector<uint8_t> cookie_less = h.Req(Op::kJoin, 1).Build();
  auto challenged =
      std::async(std::launch::async, [&] { return h.SendRaw(cookie_less, V4(192, 0, 2, 7)); });
  const bool answered = challenged.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  burst.reset();  // ends the burst: the lock is free
  ASSERT_TRUE(answered) << "a cookie-less JOIN waited for the job's exclusive lock";
  const std::vector<Emitted> e = challenged.get();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kCookie);
  const auto t = h.Telemetry();
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kJoinCookie)], drops_before + 1);
  EXPECT_EQ(t.counters.rx_by_op[static_cast<size_t>(Op::kJoin)], 2u * 2 + 1)
      << "every JOIN counted once: two per rank (the cookie's round trip) and this one";

  // Rank 0's re-JOIN from its bound address needs no cookie and binds:
  // it waits for the lock exclusive.
  burst = std::make_unique<dataplane::Pipeline::Burst>(h.pipeline());
  ASSERT_EQ(burst->Process(read, WorkerAddr(0), {}, h.now, &burst_out).verdict, Verdict::kReplied);
  const std::vector<uint8_t> rejoin_packet = h.Req(Op::kJoin, 0).Build();
  auto rejoin =
      std::async(std::launch::async, [&] { return h.SendRaw(rejoin_packet, WorkerAddr(0)); });
  const bool ran_beside_a_reader =
      rejoin.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready;
  burst.reset();
  EXPECT_FALSE(ran_beside_a_reader) << "a JOIN that binds ran under the shared lock";
  const std::vector<Emitted> ack = rejoin.get();
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].header.op, Op::kJoinAck);
}

// The cookie is SipHash-2-4: the reference implementation's test vectors
// (key 00..0f, messages 00..n-1).
TEST(Reflection, TheCookieHashIsSipHash24) {
  const dataplane::CookieSecret key{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  std::vector<uint8_t> m(64);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i);
  auto sip = [&](size_t n) { return dataplane::SipHash24(key, std::span(m.data(), n)); };
  EXPECT_EQ(sip(0), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(sip(8), 0x93f5f5799a932462ull);
  EXPECT_EQ(sip(15), 0xa129ca6149be45e5ull);
}

// The cookie proves the source receives: echoed from the address it was sent
// to (within its time bucket or the next) it binds; from another address, for
// another rank, or two buckets later it is answered with a fresh COOKIE.
TEST(Reflection, ACookieBindsOnlyItsAddressRankAndTime) {
  Harness h;
  h.CreateJob(Job(3));
  const proto::Endpoint a = WorkerAddr(0), b = WorkerAddr(0, 50000);
  auto c = h.SendRaw(h.Req(Op::kJoin, 0).Build(), a);
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(c[0].header.op, Op::kCookie);
  EXPECT_EQ(c[0].header.flags, proto::cookie::FlagsFor(Op::kJoin));
  auto with_cookie = [&](uint16_t w) {
    return h.Req(Op::kJoin, w).Clock(c[0].header.clock).Row(c[0].header.row).Build();
  };
  dataplane::ProcessResult r;
  EXPECT_EQ(h.SendRaw(with_cookie(0), b, &r).at(0).header.op, Op::kCookie);
  EXPECT_EQ(r.reason, DropReason::kJoinCookie);
  EXPECT_EQ(h.SendRaw(with_cookie(1), a, &r).at(0).header.op, Op::kCookie);
  const dataplane::Timestamp start = h.now;
  h.now = start + (uint64_t{1} << dataplane::kCookieBucketShift);  // the next bucket: still valid
  auto ack = h.SendRaw(with_cookie(0), a, &r);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].header.op, Op::kJoinAck);
  EXPECT_EQ(h.Telemetry().workers[0].addr, a);
  // Bound and live: a JOIN from its address needs no cookie.
  EXPECT_EQ(h.SendRaw(h.Req(Op::kJoin, 0).Build(), a).at(0).header.op, Op::kJoinAck);
  // Two buckets later the cookie is stale: rank 2 cannot use a's old one.
  auto c2 = h.SendRaw(h.Req(Op::kJoin, 2).Build(), a);
  h.now = start + (uint64_t{3} << dataplane::kCookieBucketShift);
  EXPECT_EQ(
      h.SendRaw(h.Req(Op::kJoin, 2).Clock(c2.at(0).header.clock).Row(c2.at(0).header.row).Build(),
                a, &r)
          .at(0)
          .header.op,
      Op::kCookie);
  EXPECT_EQ(r.reason, DropReason::kJoinCookie);
  // A switch with another secret (a restarted one) takes none of these.
  dataplane::Pipeline other(0, dataplane::CookieSecret{1, 2});
  JobConfig same = Job(3);
  same.key = h.key();
  ASSERT_TRUE(other.CreateJob(same).ok());
  dataplane::Output out = dataplane::Output::ForBatch(1);
  other.Process(with_cookie(0), a, start, &out);
  EXPECT_EQ(Harness::Decoded(out).at(0).header.op, Op::kCookie);
}

// --- LEAVE with FINISHED ---

TEST(Finish, AnEvictedRanksLeaveIsAnsweredButCannotEndTheJob) {
  Harness h;
  h.CreateJob(Job(3));
  h.JoinAll(3);
  h.Seed({1, 2, 3, 4, 5, 6});
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &out).ok());

  dataplane::ProcessResult r;
  auto e = h.Send(h.Req(Op::kLeave, 0).Flags(proto::flags::kFinished), 0, &r);
  EXPECT_EQ(r.verdict, Verdict::kReplied);
  EXPECT_EQ(r.reason, DropReason::kFinishNotLive);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kLeave) << "answered, so its client can exit";
  EXPECT_FALSE(e[0].header.flags & proto::flags::kFinished);
  auto t = h.Telemetry();
  EXPECT_FALSE(t.finished);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kFinishNotLive)], 1u);

  // The live ranks go on under SYNC: no FINISHED, real barrier.
  auto w1 = h.Step(1, 1, std::vector<int32_t>(6, 1));
  EXPECT_TRUE(ReleasedRanks(w1).empty()) << "rank 2 has not completed clock 1";
  auto w2 = h.Step(2, 1, std::vector<int32_t>(6, 1));
  EXPECT_EQ(ReleasedRanks(w2), (std::vector<uint32_t>{1, 2}));
  for (const auto& x : w2) EXPECT_FALSE(x.header.flags & proto::flags::kFinished);

  // A live rank's LEAVE with FINISHED still ends the job.
  h.Send(h.Req(Op::kLeave, 1).Flags(proto::flags::kFinished), 1, &r);
  EXPECT_EQ(r.reason, DropReason::kNone);
  EXPECT_TRUE(h.Telemetry().finished);
}

TEST(Finish, ARankThatLeftCannotEndTheJobLater) {
  Harness h;
  h.CreateJob(Job(2));
  h.JoinAll(2);
  h.Send(h.Req(Op::kLeave, 0), 0);
  dataplane::ProcessResult r;
  auto e = h.Send(h.Req(Op::kLeave, 0).Flags(proto::flags::kFinished), 0, &r);
  EXPECT_EQ(r.reason, DropReason::kFinishNotLive);
  EXPECT_EQ(OfOp(e, Op::kLeave).size(), 1u);
  EXPECT_FALSE(h.Telemetry().finished);
}

// --- Source allow-list ---

JobConfig AllowedJob(const char* allow) {
  JobConfig c = Job(3);
  auto list = dataplane::SourceAllowList::Parse(allow);
  EXPECT_TRUE(list.ok()) << list.status().message();
  c.allow = *list;
  return c;
}

TEST(AllowList, PacketsFromOutsideAreDroppedSilentlyAndCounted) {
  Harness h;
  h.CreateJob(AllowedJob("10.0.0.0/8;fd00::/8"));
  dataplane::ProcessResult r;
  // 127.0.0.1 is outside: even with the right key the JOIN gets no answer.
  auto e = h.Join(0);
  EXPECT_TRUE(e.empty());
  auto t = h.Telemetry();
  EXPECT_FALSE(t.workers[0].joined);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kSourceNotAllowed)], 1u);
  EXPECT_EQ(t.counters.rx_by_op[static_cast<size_t>(Op::kJoin)], 0u)
      << "not counted as an accepted request";

  e = h.JoinFrom(0, V4(10, 1, 2, 3), &r);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kJoinAck);
  e = h.JoinFrom(1, V6({0xfd, 0x00, 0, 7}), &r);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kJoinAck);
  e = h.JoinFrom(2, V6({0xfc, 0x00}), &r);
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(r.reason, DropReason::kSourceNotAllowed);
  e = h.JoinFrom(2, V4(11, 0, 0, 1), &r);
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(r.verdict, Verdict::kDropped);
  EXPECT_EQ(r.reason, DropReason::kSourceNotAllowed);
  EXPECT_EQ(h.Telemetry().counters.drops[static_cast<size_t>(DropReason::kSourceNotAllowed)], 3u);
}

TEST(AllowList, TheKeyIsCheckedFirst) {
  Harness h;
  h.CreateJob(AllowedJob("10.0.0.0/8"));
  dataplane::ProcessResult r;
  auto bad = PacketBuilder(Op::kJoin, 1, 0, h.key() + 1).Build();
  h.SendRaw(bad, WorkerAddr(0), &r);
  EXPECT_EQ(r.reason, DropReason::kBadKey);
  EXPECT_EQ(h.pipeline().global_counters().bad_key, 1u);
}

TEST(AllowList, AStrangerOutsideTheListCannotTouchABoundRank) {
  Harness h;
  h.CreateJob(AllowedJob("10.0.0.0/24"));
  const proto::Endpoint rank0 = V4(10, 0, 0, 9);
  ASSERT_EQ(h.JoinFrom(0, rank0).size(), 1u);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &out).ok());
  // Even an evicted rank cannot be re-bound from outside, nor the job ended.
  dataplane::ProcessResult r;
  EXPECT_TRUE(h.JoinFrom(0, V4(10, 0, 1, 9), &r).empty());
  EXPECT_EQ(r.reason, DropReason::kSourceNotAllowed);
  EXPECT_TRUE(
      h.SendRaw(h.Req(Op::kLeave, 0).Flags(proto::flags::kFinished).Build(), V4(192, 168, 0, 1), &r)
          .empty());
  auto t = h.Telemetry();
  EXPECT_EQ(t.workers[0].addr, rank0);
  EXPECT_FALSE(t.finished);
}

TEST(AllowList, EmptyListAdmitsEverySource) {
  Harness h;
  h.CreateJob(Job(2));
  EXPECT_EQ(h.JoinFrom(0, V4(203, 0, 113, 5)).size(), 1u);
  EXPECT_EQ(h.JoinFrom(1, V6({0x20, 0x01, 0x0d, 0xb8})).size(), 1u);
}

// --- The switch address packets leave from ---

TEST(SourceAddress, RepliesLeaveFromTheAddressTheRequestReached) {
  Harness h;
  h.CreateJob(Job(2));
  const proto::Endpoint a = SwitchAddr(10, 0, 0, 1), b = SwitchAddr(10, 0, 0, 2);
  auto ack0 = h.JoinFrom(0, WorkerAddr(0), nullptr, a);
  auto ack1 = h.JoinFrom(1, WorkerAddr(1), nullptr, b);
  ASSERT_EQ(ack0.size(), 1u);
  ASSERT_EQ(ack1.size(), 1u);
  EXPECT_EQ(ack0[0].src, a);
  EXPECT_EQ(ack1[0].src, b);
  EXPECT_EQ(h.Telemetry().workers[0].local, a);
  EXPECT_EQ(h.Telemetry().workers[1].local, b);

  // Seeding: rank 0 through a, rank 1 through b. Rank 1's CLOCK releases
  // both: each RELEASE leaves from the address its own rank talks to.
  for (uint32_t r = 0; r < 2; ++r) {
    h.SendRaw(h.Req(Op::kInc, 0).Clock(0).Row(r).Values({1, 2, 3}).Build(), WorkerAddr(0), a);
  }
  EXPECT_TRUE(h.SendRaw(h.Req(Op::kClock, 0).Clock(0).Row(2).Build(), WorkerAddr(0), a).empty());
  auto rel = h.SendRaw(h.Req(Op::kClock, 1).Clock(0).Row(0).Build(), WorkerAddr(1), b);
  ASSERT_EQ(ReleasedRanks(rel), (std::vector<uint32_t>{0, 1}));
  for (const auto& x : rel) {
    EXPECT_EQ(x.src, x.header.worker == 0 ? a : b) << "RELEASE of rank " << x.header.worker;
  }

  // A READ, a retransmitted CLOCK's RELEASE and an ERROR answer from where
  // the request went, even if that is not where the rank joined.
  auto read = h.SendRaw(h.Req(Op::kRead, 0).Clock(1).Row(0).Build(), WorkerAddr(0), a);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].src, a);
  auto again = h.SendRaw(h.Req(Op::kClock, 0).Clock(0).Row(2).Build(), WorkerAddr(0), b);
  ASSERT_EQ(OfOp(again, Op::kRelease).size(), 1u);
  EXPECT_EQ(again[0].src, b);
  auto error = h.SendRaw(h.Req(Op::kRead, 0).Clock(9).Row(0).Build(), WorkerAddr(0), b);
  ASSERT_EQ(OfOp(error, Op::kError).size(), 1u);
  EXPECT_EQ(error[0].src, b);
  // A NACK answers the CLOCK it refuses.
  auto nack = h.SendRaw(h.Req(Op::kClock, 1).Clock(1).Row(2).Build(), WorkerAddr(1), b);
  ASSERT_EQ(OfOp(nack, Op::kNack).size(), 1u);
  EXPECT_EQ(nack[0].src, b);

  // Rank 0 completes clock 1 and waits for rank 1; the operator evicts rank
  // 1: rank 0's RELEASE, emitted by a control operation, leaves from a.
  for (uint32_t r = 0; r < 2; ++r) {
    h.SendRaw(h.Req(Op::kInc, 0).Clock(1).Row(r).Values({1, 1, 1}).Build(), WorkerAddr(0), a);
  }
  EXPECT_TRUE(h.SendRaw(h.Req(Op::kClock, 0).Clock(1).Row(2).Build(), WorkerAddr(0), a).empty());
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 1, h.now, &out).ok());
  auto control = Harness::Decoded(out);
  ASSERT_EQ(ReleasedRanks(control), (std::vector<uint32_t>{0}));
  EXPECT_EQ(control[0].src, a);
  EXPECT_EQ(control[0].dst, WorkerAddr(0));
}

TEST(SourceAddress, ARejoinThroughAnotherAddressMovesTheRanksReleases) {
  Harness h;
  h.CreateJob(Job(2));
  const proto::Endpoint a = SwitchAddr(10, 0, 0, 1), b = SwitchAddr(10, 0, 0, 2);
  h.JoinFrom(0, WorkerAddr(0), nullptr, a);
  h.JoinFrom(1, WorkerAddr(1), nullptr, a);
  auto ack = h.JoinFrom(0, WorkerAddr(0), nullptr, b);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].src, b);
  EXPECT_EQ(h.Telemetry().workers[0].local, b);
  EXPECT_TRUE(h.SendRaw(h.Req(Op::kClock, 0).Clock(0).Row(0).Build(), WorkerAddr(0), b).empty());
  auto rel = h.SendRaw(h.Req(Op::kClock, 1).Clock(0).Row(0).Build(), WorkerAddr(1), a);
  for (const auto& x : OfOp(rel, Op::kRelease)) {
    EXPECT_EQ(x.src, x.header.worker == 0 ? b : a) << "RELEASE of rank " << x.header.worker;
  }
}

TEST(SourceAddress, UnknownWithoutALocalAddress) {
  Harness h;
  h.CreateJob(Job(1));
  auto ack = h.Join(0);  // Process() without a local address
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_FALSE(ack[0].src.valid());
  EXPECT_FALSE(h.Telemetry().workers[0].local.valid());
}

}  // namespace
}  // namespace serene::testing
