// FaultInjector: spec parsing, each fault's semantics, statistics with a
// fixed seed and determinism (net/fault_injector.h). Pure logic, no sockets.
#include "net/fault_injector.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace serene::net {
namespace {

constexpr Nanos kMs = 1'000'000;

proto::Endpoint Peer(uint16_t port) {
  proto::Endpoint ep;
  ep.family = proto::Endpoint::Family::kIPv4;
  ep.addr = {127, 0, 0, 1};
  ep.port = port;
  return ep;
}

std::vector<uint8_t> Bytes(uint32_t i) {
  return {static_cast<uint8_t>(i >> 24), static_cast<uint8_t>(i >> 16),
          static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
}

uint32_t IdOf(const std::vector<uint8_t>& b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

FaultSpec SpecOrDie(const char* text) {
  auto s = FaultSpec::Parse(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : FaultSpec{};
}

// Pushes datagrams 0..n-1, one per microsecond, popping everything due after
// each push, then drains the rest. Returns the ids in delivery order.
std::vector<uint32_t> Deliver(FaultInjector& inj, uint32_t n) {
  std::vector<uint32_t> out;
  FaultInjector::Datagram d;
  Nanos now = 0;
  for (uint32_t i = 0; i < n; ++i, now += 1000) {
    inj.Push(Peer(1), Bytes(i), now);
    while (inj.Pop(now, &d)) out.push_back(IdOf(d.bytes));
  }
  while (auto due = inj.NextDue()) {
    now = std::max(now, *due);
    while (inj.Pop(now, &d)) out.push_back(IdOf(d.bytes));
  }
  return out;
}

TEST(FaultSpecTest, ParsesEveryField) {
  FaultSpec s = SpecOrDie("drop=0.05,dup=0.02,reorder=5%,delay=2ms,hold=3ms,seed=42,dir=both");
  EXPECT_DOUBLE_EQ(s.drop, 0.05);
  EXPECT_DOUBLE_EQ(s.duplicate, 0.02);
  EXPECT_DOUBLE_EQ(s.reorder, 0.05);
  EXPECT_EQ(s.delay_min, 2 * kMs);
  EXPECT_EQ(s.delay_max, 2 * kMs);
  EXPECT_EQ(s.hold, 3 * kMs);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.direction, FaultDirection::kBoth);
  EXPECT_TRUE(s.applies_to_rx());
  EXPECT_TRUE(s.applies_to_tx());

  FaultSpec r = SpecOrDie("delay=250us..1.5ms,dir=tx");
  EXPECT_EQ(r.delay_min, 250'000u);
  EXPECT_EQ(r.delay_max, 1'500'000u);
  EXPECT_FALSE(r.applies_to_rx());
  EXPECT_TRUE(r.applies_to_tx());
}

TEST(FaultSpecTest, EmptyAndNoneAreDisabled) {
  for (const char* text : {"", "none", "off", "seed=3", "drop=0,dir=both"}) {
    FaultSpec s = SpecOrDie(text);
    EXPECT_FALSE(s.enabled()) << text;
    EXPECT_FALSE(s.applies_to_rx()) << text;
    EXPECT_FALSE(s.applies_to_tx()) << text;
  }
  EXPECT_EQ(FaultSpec{}.ToString(), "none");
}

TEST(FaultSpecTest, RefusesBadValuesNamingThem) {
  struct Case {
    const char* spec;
    const char* names;
  } cases[] = {
      {"drop=1.5", "drop=1.5"},     {"drop=abc", "drop=abc"},
      {"dup=-0.1", "dup=-0.1"},     {"reorder=200%", "reorder=200%"},
      {"delay=5", "delay=5"},       {"delay=5ms..1ms", "delay=5ms..1ms"},
      {"delay=2 ms", "delay=2 ms"}, {"hold=0", "hold=0"},
      {"dir=up", "dir=up"},         {"seed=-1", "seed=-1"},
      {"jitter=1ms", "jitter"},     {"drop", "'drop' is not key=value"},
      {"delay=1h", "delay=1h"},     {"burst=0", "burst=0"},
      {"burst=2000", "burst=2000"}, {"burst=x", "burst=x"},
      {"burst_gap=0", "burst_gap=0"}, {"burst_gap=5", "burst_gap=5"},
  };
  for (const Case& c : cases) {
    auto s = FaultSpec::Parse(c.spec);
    ASSERT_FALSE(s.ok()) << c.spec;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.names), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("expected"), std::string::npos) << s.status().message();
  }
}

TEST(FaultSpecTest, ToStringRoundTrips) {
  FaultSpec s =
      SpecOrDie("drop=0.25,burst=4,burst_gap=3ms,dup=0.125,reorder=0.5,delay=1ms..3ms,hold=7ms,"
                "seed=9,dir=tx");
  FaultSpec t = SpecOrDie(s.ToString().c_str());
  EXPECT_DOUBLE_EQ(t.drop, s.drop);
  EXPECT_DOUBLE_EQ(t.duplicate, s.duplicate);
  EXPECT_DOUBLE_EQ(t.reorder, s.reorder);
  EXPECT_EQ(t.delay_min, s.delay_min);
  EXPECT_EQ(t.delay_max, s.delay_max);
  EXPECT_EQ(t.hold, s.hold);
  EXPECT_EQ(t.seed, s.seed);
  EXPECT_EQ(t.direction, s.direction);
  EXPECT_EQ(t.burst, 4u);
  EXPECT_EQ(t.burst_gap, 3'000'000u);
  // A burst of 1 (the default) is left out, so older specs print as before.
  EXPECT_EQ(SpecOrDie("drop=0.5").ToString().find("burst"), std::string::npos);
}

TEST(FaultDurationTest, ParsesAndFormatsUnits) {
  Nanos ns = 0;
  ASSERT_TRUE(ParseDuration("1.5s", &ns));
  EXPECT_EQ(ns, 1'500'000'000u);
  ASSERT_TRUE(ParseDuration("20ns", &ns));
  EXPECT_EQ(ns, 20u);
  EXPECT_FALSE(ParseDuration("ms", &ns));
  EXPECT_FALSE(ParseDuration("-1ms", &ns));
  EXPECT_EQ(FormatDuration(1'500'000'000), "1500ms");
  EXPECT_EQ(FormatDuration(2'000'000), "2ms");
  EXPECT_EQ(FormatDuration(1'500), "1500ns");
}

TEST(FaultInjectorTest, NoFaultsDeliversEverythingInOrderAtOnce) {
  FaultInjector inj(FaultSpec{});
  FaultInjector::Datagram d;
  for (uint32_t i = 0; i < 100; ++i) {
    inj.Push(Peer(static_cast<uint16_t>(i)), Bytes(i), 5);
    ASSERT_TRUE(inj.Pop(5, &d));
    EXPECT_EQ(IdOf(d.bytes), i);
    EXPECT_EQ(d.peer, Peer(static_cast<uint16_t>(i)));
    EXPECT_FALSE(inj.Pop(5, &d));
  }
  EXPECT_EQ(inj.counters().offered, 100u);
  EXPECT_EQ(inj.counters().delivered, 100u);
  EXPECT_EQ(inj.pending(), 0u);
}

TEST(FaultInjectorTest, DropRateMatchesTheSpec) {
  FaultInjector inj(SpecOrDie("drop=0.1,seed=42"));
  constexpr uint32_t kN = 100'000;
  auto out = Deliver(inj, kN);
  const auto& c = inj.counters();
  EXPECT_EQ(c.offered, kN);
  EXPECT_EQ(c.delivered + c.dropped, kN);
  EXPECT_EQ(out.size(), c.delivered);
  // Binomial: sd = sqrt(n p (1-p)) ~ 95, so +-500 is more than 5 sd.
  EXPECT_NEAR(static_cast<double>(c.dropped), 0.1 * kN, 500);
  // Survivors keep their order.
  for (size_t i = 1; i < out.size(); ++i) ASSERT_LT(out[i - 1], out[i]);
}

TEST(FaultInjectorTest, ABurstDropLosesRunsOfConsecutiveDatagrams) {
  FaultInjector inj(SpecOrDie("drop=0.01,burst=64,seed=3"));
  constexpr uint32_t kN = 100'000;
  auto out = Deliver(inj, kN);
  const auto& c = inj.counters();
  EXPECT_EQ(c.delivered + c.dropped, kN);
  ASSERT_GT(c.dropped, 0u);
  // Every gap between survivors is a multiple of whole bursts (back-to-back
  // bursts merge), and there are as many bursts as drop draws would give.
  uint64_t bursts = 0;
  uint32_t expect = 0;
  for (uint32_t id : out) {
    const uint32_t gap = id - expect;
    EXPECT_EQ(gap % 64, 0u) << "gap of " << gap << " before " << id;
    bursts += gap / 64;
    expect = id + 1;
  }
  EXPECT_EQ(c.dropped, bursts * 64 + (kN - expect));
  // Each surviving datagram draws once: ~1 % of them start a burst.
  EXPECT_NEAR(static_cast<double>(bursts), 0.01 * static_cast<double>(out.size()), 100);
}

// A burst is an episode on a busy port: on a quiet one (a rank retransmitting
// a LEAVE once a second) 64 datagrams would take a minute, a partition.
TEST(FaultInjectorTest, AQuietPortEndsABurst) {
  constexpr uint32_t kN = 10'000;
  auto dropped_at_spacing = [](Nanos spacing) {
    FaultInjector inj(SpecOrDie("drop=0.5,burst=64,burst_gap=1ms,seed=5"));
    for (uint32_t i = 0; i < kN; ++i) inj.Push(Peer(1), Bytes(i), Nanos{i} * spacing);
    return static_cast<double>(inj.counters().dropped);
  };
  // 1 us apart (busy): nearly everything falls in some burst of 64.
  EXPECT_GT(dropped_at_spacing(1'000), 0.95 * kN);
  // 2 ms apart (quiet): each datagram ends the burst before it and draws
  // afresh, so about half are lost (sd 50).
  EXPECT_NEAR(dropped_at_spacing(2'000'000), 0.5 * kN, 300);
  // Exactly the gap apart is not quiet yet.
  EXPECT_GT(dropped_at_spacing(1'000'000), 0.95 * kN);
}

TEST(FaultInjectorTest, DuplicatesAreDeliveredTwiceBackToBack) {
  FaultInjector inj(SpecOrDie("dup=0.2,seed=7"));
  constexpr uint32_t kN = 50'000;
  auto out = Deliver(inj, kN);
  const auto& c = inj.counters();
  EXPECT_NEAR(static_cast<double>(c.duplicated), 0.2 * kN, 500);
  EXPECT_EQ(out.size(), kN + c.duplicated);
  size_t twins = 0;
  for (size_t i = 1; i < out.size(); ++i) {
    ASSERT_LE(out[i - 1], out[i]);
    if (out[i - 1] == out[i]) ++twins;
  }
  EXPECT_EQ(twins, c.duplicated);
}

TEST(FaultInjectorTest, ReorderSwapsNeighbours) {
  FaultInjector inj(SpecOrDie("reorder=1"));
  auto out = Deliver(inj, 6);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 0, 3, 2, 5, 4}));
  EXPECT_EQ(inj.counters().reordered, 3u);
}

TEST(FaultInjectorTest, ReorderRateMatchesTheSpec) {
  // A held datagram takes its successor with it, so the expected fraction of
  // reordered datagrams is p / (1 + p).
  FaultInjector inj(SpecOrDie("reorder=0.1,seed=1"));
  constexpr uint32_t kN = 100'000;
  auto out = Deliver(inj, kN);
  ASSERT_EQ(out.size(), kN);
  EXPECT_NEAR(static_cast<double>(inj.counters().reordered), kN * 0.1 / 1.1, 600);
  size_t inversions = 0;
  for (size_t i = 1; i < out.size(); ++i) inversions += out[i - 1] > out[i] ? 1 : 0;
  EXPECT_EQ(inversions, inj.counters().reordered);
}

TEST(FaultInjectorTest, HeldDatagramIsReleasedAtTheEndOfTheHold) {
  FaultInjector inj(SpecOrDie("reorder=1,hold=5ms"));
  FaultInjector::Datagram d;
  inj.Push(Peer(1), Bytes(9), 10 * kMs);
  EXPECT_FALSE(inj.Pop(10 * kMs, &d));
  ASSERT_TRUE(inj.NextDue().has_value());
  EXPECT_EQ(*inj.NextDue(), 15 * kMs);
  EXPECT_EQ(inj.pending(), 1u);
  EXPECT_FALSE(inj.Pop(15 * kMs - 1, &d));
  ASSERT_TRUE(inj.Pop(15 * kMs, &d));
  EXPECT_EQ(IdOf(d.bytes), 9u);
  EXPECT_EQ(inj.counters().held_expired, 1u);
  EXPECT_EQ(inj.counters().reordered, 0u);
  EXPECT_FALSE(inj.NextDue().has_value());
}

TEST(FaultInjectorTest, FixedDelayHoldsUntilDue) {
  FaultInjector inj(SpecOrDie("delay=2ms"));
  FaultInjector::Datagram d;
  inj.Push(Peer(1), Bytes(1), 1 * kMs);
  inj.Push(Peer(1), Bytes(2), 1 * kMs + 10);
  EXPECT_FALSE(inj.Pop(2 * kMs, &d));
  EXPECT_EQ(*inj.NextDue(), 3 * kMs);
  ASSERT_TRUE(inj.Pop(3 * kMs, &d));
  EXPECT_EQ(IdOf(d.bytes), 1u);
  EXPECT_EQ(d.due, 3 * kMs);
  EXPECT_FALSE(inj.Pop(3 * kMs, &d));
  ASSERT_TRUE(inj.Pop(3 * kMs + 10, &d));
  EXPECT_EQ(IdOf(d.bytes), 2u);
  EXPECT_EQ(inj.counters().delayed, 2u);
}

TEST(FaultInjectorTest, UniformDelayStaysInRangeWithTheRightMean) {
  FaultInjector inj(SpecOrDie("delay=1ms..3ms,seed=5"));
  constexpr uint32_t kN = 20'000;
  FaultInjector::Datagram d;
  double sum = 0;
  Nanos lo = ~Nanos{0}, hi = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    inj.Push(Peer(1), Bytes(i), 0);
  }
  while (inj.Pop(3 * kMs, &d)) {
    lo = std::min(lo, d.due);
    hi = std::max(hi, d.due);
    sum += static_cast<double>(d.due);
  }
  EXPECT_EQ(inj.counters().delivered, kN);
  EXPECT_GE(lo, 1 * kMs);
  EXPECT_LE(hi, 3 * kMs);
  // Uniform on [1, 3] ms: sd of the mean = (2ms / sqrt 12) / sqrt n ~ 4us.
  EXPECT_NEAR(sum / kN, 2.0 * kMs, 40'000);
}

TEST(FaultInjectorTest, SameSeedAndStreamGiveTheSameOutcome) {
  const char* spec = "drop=0.1,dup=0.05,reorder=0.1,delay=0..50us,seed=42";
  FaultInjector a(SpecOrDie(spec), 3), b(SpecOrDie(spec), 3);
  auto out_a = Deliver(a, 10'000), out_b = Deliver(b, 10'000);
  EXPECT_EQ(out_a, out_b);
  EXPECT_EQ(a.counters().dropped, b.counters().dropped);

  FaultInjector other_stream(SpecOrDie(spec), 4);
  FaultInjector other_seed(SpecOrDie("drop=0.1,dup=0.05,reorder=0.1,delay=0..50us,seed=43"), 3);
  EXPECT_NE(Deliver(other_stream, 10'000), out_a);
  EXPECT_NE(Deliver(other_seed, 10'000), out_a);
}

TEST(FaultInjectorTest, CountersAddUp) {
  FaultInjector inj(SpecOrDie("drop=0.2,dup=0.2,reorder=0.2,delay=0..1ms,hold=1ms,seed=11"));
  FaultInjector::Datagram d;
  uint64_t popped = 0;
  for (uint32_t i = 0; i < 5000; ++i) {
    inj.Push(Peer(1), Bytes(i), Nanos{i} * 100);
    while (inj.Pop(Nanos{i} * 100, &d)) ++popped;
    const auto& c = inj.counters();
    ASSERT_EQ(c.offered + c.duplicated, c.delivered + c.dropped + inj.pending());
  }
  EXPECT_EQ(popped, inj.counters().delivered);
  FaultCounters sum;
  sum += inj.counters();
  sum += inj.counters();
  EXPECT_EQ(sum.offered, 10'000u);
}

}  // namespace
}  // namespace serene::net
