// The policies shipped in policies/, driven with synthetic telemetry: the
// static ones return their rule, scheduled.lua switches at its clock, and
// adaptive.lua follows stragglers without flapping. The engine itself is in
// policy_script_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "control/policy_script.h"
#include "tests/control/policy_test_telemetry.h"

namespace serene::control {
namespace {

using dataplane::BarrierParams;
using testing::Derive;
using ::testing::HasSubstr;
using testing::MakeTelemetry;
using testing::Ns;
using ::testing::StartsWith;

const std::filesystem::path kPolicies = std::filesystem::path(SERENE_SOURCE_DIR) / "policies";

std::unique_ptr<PolicyScript> LoadPolicy(const std::string& file,
                                         const PolicyScript::Params& params = {}) {
  auto script = PolicyScript::LoadFile((kPolicies / file).string(), params);
  EXPECT_TRUE(script.ok()) << script.status().message();
  return script.ok() ? std::move(*script) : nullptr;
}

// ---------------------------------------------------------------- every file

TEST(PoliciesTest, EveryPolicyStartsWithAHeaderAndIsDocumented) {
  std::ifstream doc_file(std::filesystem::path(SERENE_SOURCE_DIR) / "docs" / "policies.md");
  std::stringstream doc;
  doc << doc_file.rdbuf();
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kPolicies)) {
    if (entry.path().extension() != ".lua") continue;
    const std::string name = entry.path().filename().string();
    names.insert(name);
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    EXPECT_THAT(first, StartsWith("-- " + name + ": ")) << "the header says what it does";
    EXPECT_THAT(doc.str(), HasSubstr("### " + name)) << "docs/policies.md describes it";
  }
  EXPECT_EQ(names, (std::set<std::string>{"adaptive.lua", "async.lua", "quorum.lua",
                                          "scheduled.lua", "ssp.lua", "sync.lua"}));
}

TEST(PoliciesTest, TheDocsExamplesRun) {
  std::ifstream doc_file(std::filesystem::path(SERENE_SOURCE_DIR) / "docs" / "policies.md");
  std::string line, block;
  bool in_block = false;
  int examples = 0;
  v1::JobTelemetry calm = MakeTelemetry(4, 1000);
  Derive(&calm);
  v1::JobTelemetry slow = calm;
  slow.mutable_ranks(2)->set_work_ns(Ns(1.0));
  while (std::getline(doc_file, line)) {
    if (!in_block && line == "```lua") {
      in_block = true;
      block.clear();
    } else if (in_block && line == "```") {
      in_block = false;
      ++examples;
      SCOPED_TRACE(block);
      auto script = PolicyScript::LoadString(block, "example.lua", {});
      ASSERT_TRUE(script.ok()) << script.status().message();
      if (!(*script)->adaptive()) continue;
      for (const v1::JobTelemetry& t : {calm, slow, calm}) {
        auto d = (*script)->OnTelemetry(t);
        EXPECT_TRUE(d.ok()) << d.status().message();
      }
    } else if (in_block) {
      block += line + "\n";
    }
  }
  EXPECT_GE(examples, 6);
}

// ---------------------------------------------------------------- static

TEST(PoliciesTest, StaticPolicies) {
  struct Case {
    const char* file;
    PolicyScript::Params params;
    BarrierParams rule;
  };
  const Case cases[] = {
      {"sync.lua", {}, BarrierParams::Sync()},
      {"ssp.lua", {}, BarrierParams::Ssp(10)},
      {"ssp.lua", {{"w", "3"}}, BarrierParams::Ssp(3)},
      {"ssp.lua", {{"w", "inf"}}, BarrierParams::Async()},
      {"async.lua", {}, BarrierParams::Async()},
      {"quorum.lua", {{"k", "3"}}, BarrierParams::Quorum(3, 10)},
      {"quorum.lua", {{"k", "3"}, {"l", "2"}}, BarrierParams::Quorum(3, 2)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto script = LoadPolicy(c.file, c.params);
    ASSERT_NE(script, nullptr);
    EXPECT_FALSE(script->adaptive());
    ASSERT_TRUE(script->initial().has_value());
    EXPECT_EQ(script->initial()->rule, c.rule);
  }
}

TEST(PoliciesTest, QuorumNeedsK) {
  auto script = PolicyScript::LoadFile((kPolicies / "quorum.lua").string(), {});
  EXPECT_EQ(script.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(script.status().message(), StartsWith("quorum.lua:"));
  EXPECT_THAT(script.status().message(), HasSubstr("needs params.k"));
  auto bad = PolicyScript::LoadFile((kPolicies / "quorum.lua").string(), {{"k", "0"}});
  EXPECT_THAT(bad.status().message(), HasSubstr("quorum: k must be"));
}

// ---------------------------------------------------------------- scheduled

TEST(PoliciesTest, ScheduledSwitchesToSspAtTheClock) {
  auto script = LoadPolicy("scheduled.lua");
  ASSERT_NE(script, nullptr);
  EXPECT_TRUE(script->adaptive());
  ASSERT_TRUE(script->initial().has_value());
  EXPECT_EQ(script->initial()->rule, BarrierParams::Sync());

  // Early in the run: schedule SSP(10) from clock 100.
  v1::JobTelemetry t = MakeTelemetry(4, 10);
  Derive(&t);
  auto d = script->OnTelemetry(t);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->rule, BarrierParams::Ssp(10));
  EXPECT_EQ((*d)->effective_clock, 100u);
  EXPECT_EQ((*d)->text, "ssp(10) at 100");

  // While the change is pending, and once it is in force: nothing.
  t.mutable_policy()->set_swap_pending(true);
  *t.mutable_policy()->mutable_next() = RuleToProto(BarrierParams::Ssp(10));
  EXPECT_FALSE(script->OnTelemetry(t)->has_value());
  t.mutable_policy()->set_swap_pending(false);
  *t.mutable_policy()->mutable_active() = RuleToProto(BarrierParams::Ssp(10));
  t.mutable_policy()->set_max_released(150);
  EXPECT_FALSE(script->OnTelemetry(t)->has_value());
}

TEST(PoliciesTest, ScheduledPastTheClockSwitchesAtOnce) {
  auto script = LoadPolicy("scheduled.lua", {{"sync_clocks", "50"}, {"w", "4"}});
  ASSERT_NE(script, nullptr);
  v1::JobTelemetry t = MakeTelemetry(4, 10);
  auto early = script->OnTelemetry(t);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ((*early)->text, "ssp(4) at 50");

  t.mutable_policy()->set_max_released(50);  // clock 50 already released
  auto late = script->OnTelemetry(t);
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ((*late)->rule, BarrierParams::Ssp(4));
  EXPECT_FALSE((*late)->effective_clock.has_value());
}

TEST(PoliciesTest, ScheduledMakesTheWarmUpSync) {
  auto script = LoadPolicy("scheduled.lua");
  ASSERT_NE(script, nullptr);
  v1::JobTelemetry t = MakeTelemetry(4, 10, 0.1, BarrierParams::Async());
  auto d = script->OnTelemetry(t);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->rule, BarrierParams::Sync());
  EXPECT_FALSE((*d)->effective_clock.has_value());
}

// ---------------------------------------------------------------- adaptive

constexpr double kStep = 0.1;  // seconds, every healthy rank's step
constexpr int kRanks = 4;

// Drives adaptive.lua as the controller would: one call per period, and a
// returned rule in force by the next call (its swap retired).
class AdaptiveTest : public ::testing::Test {
 protected:
  void Load(const PolicyScript::Params& params = {}) {
    script_ = LoadPolicy("adaptive.lua", params);
    ASSERT_NE(script_, nullptr);
    EXPECT_TRUE(script_->adaptive());
    EXPECT_FALSE(script_->initial().has_value());
  }

  void SetUp() override {
    t_ = MakeTelemetry(kRanks, 1000, kStep);
    Derive(&t_);
  }

  void SetRule(const BarrierParams& rule) {
    *t_.mutable_policy()->mutable_active() = RuleToProto(rule);
  }
  uint32_t window() const { return t_.policy().active().window(); }

  // A calm period of `dt` seconds: every rank at the typical step, within one
  // clock of the others, waiting ~2 % of the time (jitter).
  void Calm(double dt = 1) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_work_ns(Ns(kStep));
      r->set_last_work_ns(Ns(kStep));
      r->set_silent_ns(Ns(kStep / 2));
      r->set_done(1000 + (i == 0 ? 1 : 0));
      r->set_waiting(false);
      r->set_wait_now_ns(0);
      r->set_wait_total_ns(r->wait_total_ns() + Ns(0.02 * dt));
    }
    Advance(dt);
  }

  // A period in which rank `slow` takes `work` seconds a step and the others,
  // a window ahead of it, wait at the barrier most of the time.
  void Straggle(int slow, double work, double dt = 1) {
    const int64_t ahead = static_cast<int64_t>(std::min<uint32_t>(window(), 1000)) + 1;
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      const bool is_slow = i == slow;
      r->set_work_ns(Ns(is_slow ? work : kStep));
      r->set_last_work_ns(Ns(is_slow ? work : kStep));
      r->set_silent_ns(Ns(is_slow ? work / 2 : kStep / 2));
      r->set_done(is_slow ? 1000 : 1000 + ahead);
      r->set_waiting(!is_slow);
      r->set_wait_now_ns(is_slow ? 0 : Ns(work / 2));
      r->set_wait_total_ns(r->wait_total_ns() + (is_slow ? 0 : Ns(0.8 * dt)));
    }
    Advance(dt);
  }

  // slow_worker: every rank stalls now and then; this period `slow` is in a
  // stall of 3 steps and the others, a window ahead, wait for it.
  void StallOnEveryRank(int slow) {
    const int64_t ahead = static_cast<int64_t>(window()) + 1;
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_work_ns(Ns(1.1 * kStep));                         // EWMA: a little above
      r->set_last_work_ns(Ns(i == slow ? 3 * kStep : kStep));  // one stall in sight
      r->set_silent_ns(Ns(kStep / 2));
      r->set_done(i == slow ? 1000 : 1000 + ahead);
      r->set_waiting(i != slow);
      r->set_wait_now_ns(i != slow ? Ns(kStep) : 0);
      r->set_wait_total_ns(r->wait_total_ns() + (i != slow ? Ns(0.4) : 0));
    }
    Advance(1);
  }

  void Advance(double dt) {
    t_.set_now_ns(t_.now_ns() + Ns(dt));
    Derive(&t_);
  }

  // Calls the policy; a returned rule is in force from the next call.
  std::optional<PolicyDecision> Decide() {
    auto d = script_->OnTelemetry(t_);
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (!d.ok() || !d->has_value()) return std::nullopt;
    EXPECT_NE((*d)->rule, RuleFromProto(t_.policy().active(), kRanks, "rule").value())
        << "returns a rule only when it differs from the one in force";
    EXPECT_FALSE((*d)->effective_clock.has_value());
    SetRule((*d)->rule);
    return *d;
  }

  std::unique_ptr<PolicyScript> script_;
  v1::JobTelemetry t_;
};

TEST_F(AdaptiveTest, EqualRanksStaySync) {
  Load();
  for (int i = 0; i < 30; ++i) {
    Calm();
    EXPECT_EQ(Decide(), std::nullopt) << "call " << i;
  }
  EXPECT_EQ(window(), 0u);
}

TEST_F(AdaptiveTest, EqualRanksReturnToSyncFromAnyWindow) {
  Load();
  SetRule(BarrierParams::Ssp(10));
  Calm();
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Sync());
  EXPECT_EQ(d->text, "sync()");
}

TEST_F(AdaptiveTest, NoStepMeasuredYetKeepsTheRule) {
  Load();
  for (v1::RankTelemetry& r : *t_.mutable_ranks()) {
    r.set_work_ns(0);
    r.set_last_work_ns(0);
  }
  SetRule(BarrierParams::Ssp(5));
  EXPECT_EQ(Decide(), std::nullopt);
}

TEST_F(AdaptiveTest, ATenTimesSlowerRankRaisesTheWindowToCoverItsStall) {
  Load();
  Calm();
  EXPECT_EQ(Decide(), std::nullopt);
  Straggle(3, 10 * kStep);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  // A stall of 9 steps needs W >= 9; with the 1.25 margin, 12.
  EXPECT_EQ(d->rule, BarrierParams::Ssp(12));
  const std::vector<std::string> log = script_->TakeLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], StartsWith("sync() -> ssp(12): step 0.100 s, need 9 steps (rank 3)"));
}

TEST_F(AdaptiveTest, WaitingNowIsEnoughOnTheFirstCall) {
  Load();
  Straggle(1, 10 * kStep);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(12));
}

TEST_F(AdaptiveTest, AStallUnderWayIsSeenThroughSilence) {
  Load();
  Calm();
  Decide();
  // Rank 2 has sent nothing for 2 s, its step times still look normal; the
  // others have completed their clock and wait for it.
  for (int i = 0; i < kRanks; ++i) {
    v1::RankTelemetry* r = t_.mutable_ranks(i);
    r->set_done(i == 2 ? 1000 : 1001);
    r->set_waiting(i != 2);
    r->set_wait_now_ns(i == 2 ? 0 : Ns(1.5));
    r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.9)));
  }
  t_.mutable_ranks(2)->set_silent_ns(Ns(2.0));
  Advance(1);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(24));  // ceil(19 x 1.25)
}

TEST_F(AdaptiveTest, WindowIsClampedToMaxW) {
  Load({{"max_w", "8"}});
  Straggle(0, 10 * kStep);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(8));
}

TEST_F(AdaptiveTest, JitterDoesNotGrowTheWindow) {
  Load();
  const double works[kRanks] = {0.1, 0.11, 0.12, 0.125};  // all within 1.3x the median
  for (int call = 0; call < 30; ++call) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_work_ns(Ns(works[i]));
      r->set_last_work_ns(Ns(works[i] * (call % 2 == 0 ? 1.1 : 0.9)));
      r->set_done(1000 + (i == 3 ? 0 : 1));
      r->set_waiting(i != 3);
      r->set_wait_now_ns(i != 3 ? Ns(0.01) : 0);
      r->set_wait_total_ns(r->wait_total_ns() + Ns(0.05));
    }
    Advance(1);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
}

TEST_F(AdaptiveTest, SwapPendingReturnsNil) {
  Load();
  Calm();
  Decide();
  t_.mutable_policy()->set_swap_pending(true);
  Straggle(3, 10 * kStep);
  EXPECT_EQ(Decide(), std::nullopt);
  t_.mutable_policy()->set_swap_pending(false);
  Straggle(3, 10 * kStep);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(12));
}

TEST_F(AdaptiveTest, APersistentStragglerDoesNotMakeItFlap) {
  Load();
  Straggle(3, 10 * kStep);
  ASSERT_TRUE(Decide().has_value());
  // The others still wait (no window hides a slower machine): W holds.
  for (int i = 0; i < 100; ++i) {
    Straggle(3, 10 * kStep);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << i;
  }
  EXPECT_EQ(window(), 12u);
}

TEST_F(AdaptiveTest, AfterTheStallTheWindowDecaysSlowlyToSync) {
  Load();
  Calm();
  Decide();
  Straggle(3, 10 * kStep);
  ASSERT_TRUE(Decide().has_value());
  ASSERT_EQ(window(), 12u);

  const double grown_at = static_cast<double>(t_.now_ns()) / 1e9;
  double last_change = grown_at;
  uint32_t last = window();
  int changes = 0;
  for (int call = 0; call < 900 && window() > 0; ++call) {
    Calm();
    auto d = Decide();
    if (!d.has_value()) continue;
    const double now = static_cast<double>(t_.now_ns()) / 1e9;
    ++changes;
    EXPECT_LT(window(), last) << "only shrinks while calm";
    EXPECT_GE(window() * 4 + 3, last * 3) << "by at most a quarter at a time";
    EXPECT_GE(now - last_change, 10 - 1e-6) << "at most once per hold period";
    last_change = now;
    last = window();
  }
  EXPECT_EQ(window(), 0u) << "back to sync() once the stall is forgotten";
  EXPECT_GE(changes, 4) << "step by step, not at once";
  EXPECT_GE(last_change - grown_at, 60) << "remembers a stall for a while";
}

TEST_F(AdaptiveTest, TheCatchUpAfterAShrinkDoesNotGrowItBack) {
  Load();
  Straggle(3, 10 * kStep);
  ASSERT_TRUE(Decide().has_value());
  int calls = 0;
  while (window() == 12u && calls++ < 100) {
    Calm();
    Decide();
  }
  const uint32_t shrunk = window();
  ASSERT_LT(shrunk, 12u);
  // Rank 3 still lags by the old window: the others wait for it to catch up,
  // but its steps are normal again, so there is nothing to cover.
  for (int i = 0; i < 5; ++i) {
    for (int r = 0; r < kRanks; ++r) {
      v1::RankTelemetry* rank = t_.mutable_ranks(r);
      rank->set_done(r == 3 ? 1000 : 1012);
      rank->set_waiting(r != 3);
      rank->set_wait_now_ns(r != 3 ? Ns(0.3) : 0);
      rank->set_wait_total_ns(rank->wait_total_ns() + (r != 3 ? Ns(0.5) : 0));
    }
    Advance(1);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << i;
  }
  EXPECT_EQ(window(), shrunk);
}

// slow_worker: every rank stalls now and then (step EWMAs stay near the
// median), so the lag is a random walk that one stall's need underestimates.
// While the window still binds with a stall in sight, it doubles.
TEST_F(AdaptiveTest, StallsOnEveryRankDoubleTheWindowWhileItBinds) {
  Load();
  Calm();
  Decide();  // the baseline of the waiting counters
  std::vector<uint32_t> windows;
  for (int call = 0; call < 5; ++call) {
    StallOnEveryRank(call % kRanks);
    if (Decide().has_value()) windows.push_back(window());
  }
  EXPECT_EQ(windows, (std::vector<uint32_t>{3, 6, 12, 24, 48}));
}

// With `jump`, the first wait for stalls that come now and then goes straight
// to that window (then doubles while it still binds); a persistent straggler
// still gets only the window that covers its step.
TEST_F(AdaptiveTest, JumpSkipsTheDoublingsForStallsOnEveryRank) {
  Load({{"jump", "32"}});
  Calm();
  Decide();
  std::vector<uint32_t> windows;
  for (int call = 0; call < 3; ++call) {
    StallOnEveryRank(call % kRanks);
    if (Decide().has_value()) windows.push_back(window());
  }
  EXPECT_EQ(windows, (std::vector<uint32_t>{32, 64}));
  const std::vector<std::string> log = script_->TakeLog();
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log[0], StartsWith("sync() -> ssp(32): "));
}

TEST_F(AdaptiveTest, JumpLeavesAPersistentStragglerAtItsNeed) {
  Load({{"jump", "32"}});
  Straggle(3, 10 * kStep);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(12));
}

TEST_F(AdaptiveTest, WaitingUnderSyncGrowsEvenWithNoStallInSight) {
  Load();
  Calm();
  Decide();
  for (int call = 0; call < 3; ++call) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(1000 + (i == 0 ? 0 : static_cast<int64_t>(window()) + 1));
      r->set_waiting(i != 0);
      r->set_wait_now_ns(0);
      r->set_wait_total_ns(r->wait_total_ns() + Ns(0.5));  // half the period
    }
    Advance(1);
    Decide();
  }
  EXPECT_EQ(window(), 4u) << "1, 2, 4";
}

TEST_F(AdaptiveTest, EvictedRanksAreIgnored) {
  Load();
  // A dead rank, silent for long and far behind, but out of the barrier.
  v1::RankTelemetry* dead = t_.mutable_ranks(3);
  Calm();
  dead->set_live(false);
  dead->set_silent_ns(Ns(60));
  dead->set_done(10);
  dead->set_work_ns(Ns(5));
  Derive(&t_);
  EXPECT_EQ(Decide(), std::nullopt);
}

}  // namespace
}  // namespace serene::control
