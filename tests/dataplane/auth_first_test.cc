// Authentication before any lock or state (docs/security.md, "Floods of
// strangers"): a packet with a wrong key, or from outside the job's
// allow-list, is dropped and counted without taking the job's lock, so a
// flood of them neither waits for the job's traffic nor holds it back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::JobConfig;
using dataplane::Output;
using dataplane::Pipeline;
using dataplane::Verdict;
using proto::Op;

constexpr uint32_t kRanks = 4, kRows = 8, kWidth = 16;

// Job 1, SYNC, whose sources must be in 127.0.0.0/8 (WorkerAddr's).
JobConfig AllowListedJob() {
  JobConfig c = TestJob(kRanks, BarrierParams::Sync(), kRows * kWidth, kWidth);
  auto allow = dataplane::SourceAllowList::Parse("127.0.0.0/8");
  EXPECT_TRUE(allow.ok());
  if (allow.ok()) c.allow = *allow;
  return c;
}

proto::Endpoint Outsider() { return SwitchAddr(10, 9, 8, 7); }

// What strangers send: JOIN, CLOCK and LEAVE (which would take the job's
// lock exclusive) with a wrong key, and the same with the right key from
// outside the allow-list.
struct StrangerPacket {
  std::vector<uint8_t> bytes;
  proto::Endpoint src;
  DropReason reason;
};
std::vector<StrangerPacket> Strangers(uint32_t key) {
  std::vector<StrangerPacket> s;
  for (Op op : {Op::kJoin, Op::kClock, Op::kLeave}) {
    for (uint16_t w = 0; w < kRanks; ++w) {
      s.push_back({PacketBuilder(op, 1, w, 0).Clock(1).Build(), WorkerAddr(w, 50000),
                   DropReason::kBadKey});
      s.push_back({PacketBuilder(op, 1, w, key + 1).Build(), WorkerAddr(w), DropReason::kBadKey});
      s.push_back({PacketBuilder(op, 1, w, key).Build(), Outsider(), DropReason::kSourceNotAllowed});
    }
  }
  return s;
}

// While another thread holds the job's lock (a burst of the job's READs that
// has not ended), strangers' packets are still dropped: they never wait for
// the lock. A JOIN with the right key, which takes it exclusive, waits until
// the hold ends — so the test would see a stranger's packet take the lock.
TEST(AuthenticateFirst, StrangersNeverWaitForTheJobsLock) {
  Harness h;
  h.CreateJob(AllowListedJob());
  h.JoinAll(kRanks);
  h.Seed(std::vector<int32_t>(kRows * kWidth, 1));

  Output held_out = Output::ForBatch(1);
  auto burst = std::make_unique<Pipeline::Burst>(h.pipeline());
  const auto read = h.Req(Op::kRead, 0).Clock(1).Row(0).Build();
  ASSERT_EQ(burst->Process(read, WorkerAddr(0), proto::Endpoint{}, h.now, &held_out).verdict,
            Verdict::kReplied);  // the burst now holds the job's lock shared

  const std::vector<StrangerPacket> strangers = Strangers(h.key());
  constexpr int kRepeats = 1000;
  auto flood = std::async(std::launch::async, [&] {
    Output out = Output::ForBatch(1);
    uint64_t emitted = 0, wrong = 0;
    for (int i = 0; i < kRepeats; ++i) {
      for (const StrangerPacket& s : strangers) {
        out.Clear();
        auto r = h.pipeline().Process(s.bytes, s.src, h.now, &out);
        if (r.verdict != Verdict::kDropped || r.reason != s.reason) ++wrong;
        emitted += out.size();
      }
    }
    return std::make_pair(emitted, wrong);
  });
  const bool in_time = flood.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!in_time) burst.reset();  // lets the waiting stranger in, so that the test ends
  ASSERT_TRUE(in_time) << "a stranger's packet waits for the job's lock";
  const auto [emitted, wrong] = flood.get();
  EXPECT_EQ(emitted, 0u) << "strangers get no answer";
  EXPECT_EQ(wrong, 0u);

  // The control: an authenticated JOIN does take the lock exclusive, so it
  // cannot complete while the burst holds the job.
  auto join = std::async(std::launch::async, [&] {
    Output out = Output::ForBatch(1);
    return h.pipeline().Process(h.Req(Op::kJoin, 1).Build(), WorkerAddr(1), h.now, &out).verdict;
  });
  EXPECT_EQ(join.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  burst.reset();  // ends the hold
  EXPECT_EQ(join.get(), Verdict::kReplied);

  const auto t = h.Telemetry();
  const uint64_t per_reason = uint64_t{kRepeats} * 3 * kRanks;
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kBadKey)], 2 * per_reason);
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kSourceNotAllowed)], per_reason);
  EXPECT_EQ(h.pipeline().global_counters().bad_key, 2 * per_reason);
  // Nothing of the job moved: only the real ranks' JOINs were counted (two
  // each: the first is answered with a COOKIE, then the control's), no rank
  // was re-bound, evicted or refused anything.
  EXPECT_EQ(t.counters.rx_by_op[static_cast<size_t>(Op::kJoin)], 2 * kRanks + 1);
  EXPECT_EQ(t.counters.errors, 0u);
  for (uint32_t w = 0; w < kRanks; ++w) {
    EXPECT_EQ(t.workers[w].addr, WorkerAddr(w));
    EXPECT_TRUE(t.workers[w].live);
  }
}

// The ranks run SYNC clocks on one thread (receive batches as
// Pipeline::Burst, as the daemon's loop) while another floods the job with
// strangers' packets: every clock releases every rank, the model is the
// exact sum, and each stranger's packet is counted under its reason.
TEST(AuthenticateFirst, TheRanksFinishUnderAFloodOfStrangers) {
  Harness h;
  h.CreateJob(AllowListedJob());
  h.JoinAll(kRanks);
  h.Seed(std::vector<int32_t>(kRows * kWidth, 0));

  const std::vector<StrangerPacket> strangers = Strangers(h.key());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad_key{0}, not_allowed{0}, emitted{0};
  std::thread flood([&] {
    Output out = Output::ForBatch(32);
    while (!stop.load()) {
      Pipeline::Burst b(h.pipeline());
      out.Clear();
      for (const StrangerPacket& s : strangers) {
        b.Process(s.bytes, s.src, proto::Endpoint{}, h.now, &out);
        ++(s.reason == DropReason::kBadKey ? bad_key : not_allowed);
      }
      emitted += out.size();
    }
  });

  // At least 200 clocks, and as many as it takes for 10,000 strangers'
  // packets to arrive while the ranks run (the flooding thread may start late).
  while (bad_key.load() == 0) std::this_thread::yield();
  const uint64_t flood_start = bad_key.load();
  Output out = Output::ForBatch(32);
  uint32_t clocks = 0, fully_released = 0;
  for (uint32_t c = 1; c <= 200 || bad_key.load() - flood_start < 10'000; ++c) {
    clocks = c;
    size_t released = 0;
    for (uint16_t w = 0; w < kRanks; ++w) {
      Pipeline::Burst b(h.pipeline());
      out.Clear();
      for (uint32_t r = 0; r < kRows; ++r) {
        auto inc = h.Req(Op::kInc, w).Clock(c).Row(r).Values(std::vector<int32_t>(kWidth, 1));
        b.Process(inc.Build(), WorkerAddr(w), proto::Endpoint{}, h.now, &out);
      }
      b.Process(h.Req(Op::kClock, w).Clock(c).Row(kRows).Build(), WorkerAddr(w),
                proto::Endpoint{}, h.now, &out);
      released = OfOp(Harness::Decoded(out), Op::kRelease).size();
    }
    if (released == kRanks) ++fully_released;
  }
  stop.store(true);
  flood.join();

  EXPECT_EQ(fully_released, clocks);
  EXPECT_EQ(h.Model(), std::vector<int32_t>(kRows * kWidth, static_cast<int32_t>(kRanks * clocks)));
  EXPECT_EQ(emitted.load(), 0u);
  const auto t = h.Telemetry();
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kBadKey)], bad_key.load());
  EXPECT_EQ(t.counters.drops[static_cast<size_t>(DropReason::kSourceNotAllowed)],
            not_allowed.load());
  EXPECT_EQ(t.counters.rx_by_op[static_cast<size_t>(Op::kJoin)], 2 * kRanks);  // COOKIE, JOIN_ACK
  EXPECT_EQ(t.counters.errors, 0u);
}

}  // namespace
}  // namespace serene::testing
