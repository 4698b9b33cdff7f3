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
using ::testing::AllOf;
using testing::Derive;
using ::testing::HasSubstr;
using testing::MakeTelemetry;
using ::testing::Not;
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

// A parameter a script does not know (a typo, or `jump`, which an earlier
// adaptive.lua had) is refused at load, not run as the defaults unseen.
TEST(PoliciesTest, UnknownParametersAreRefused) {
  auto adaptive = PolicyScript::LoadFile((kPolicies / "adaptive.lua").string(), {{"jump", "32"}});
  EXPECT_EQ(adaptive.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(adaptive.status().message(), HasSubstr("unknown parameter 'jump'"));
  EXPECT_THAT(adaptive.status().message(), HasSubstr("known: start, max_w, slow, wait, hold, horizon"));
  auto scheduled = PolicyScript::LoadFile((kPolicies / "scheduled.lua").string(), {{"W", "10"}});
  EXPECT_THAT(scheduled.status().message(), HasSubstr("unknown parameter 'W'"));
  for (const char* name : {"start", "max_w", "slow", "wait", "hold", "horizon"}) {
    EXPECT_TRUE(PolicyScript::LoadFile((kPolicies / "adaptive.lua").string(), {{name, "2"}}).ok())
        << name;
  }
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
  // The horizon is one period (10 steps of kStep, the periods being 1 s)
  // unless a test sets it: each call is judged on its own period's waits.
  void Load(PolicyScript::Params params = {}) {
    params.emplace("horizon", "10");
    script_ = LoadPolicy("adaptive.lua", params);
    ASSERT_NE(script_, nullptr);
    EXPECT_TRUE(script_->adaptive());
    // The rule at load is in force from the first call, as the controller
    // installs it before the ranks start.
    ASSERT_TRUE(script_->initial().has_value());
    SetRule(script_->initial()->rule);
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

  // A slower machine: rank `slow` straggles on 3 calls in a row (a rank is
  // persistent only then); the first two keep the rule in force (it is slow
  // but not yet persistent), the third leaves it out of a quorum. Returns
  // the third decision.
  std::optional<PolicyDecision> StraggleUntilPersistent(int slow, double work) {
    for (int call = 0; call < 2; ++call) {
      Straggle(slow, work);
      EXPECT_EQ(Decide(), std::nullopt) << "call " << call << ": not persistent yet";
    }
    Straggle(slow, work);
    return Decide();
  }

  // slow_worker: every rank stalls now and then; this period `slow` is in a
  // stall of 3 steps and the others, a window ahead, wait for it.
  void StallOnEveryRank(int slow) {
    const int64_t ahead = static_cast<int64_t>(std::min<uint32_t>(window(), 1000)) + 1;
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

  // Periods of 0.5 s, 5 clocks each; in every fifth (from the third) rank 0
  // evaluates the test set, `lag` clocks behind the others, and they wait
  // `wait` for it (`wait_now` of it at the snapshot), while rank 0 reports a
  // pause of `pause` (0: none). Returns the first decision of the policy
  // loaded with `params`, if any within 20 calls.
  std::optional<PolicyDecision> EvaluateEveryFifthPeriod(PolicyScript::Params params,
                                                         double wait, double wait_now,
                                                         double pause = 0, int64_t lag = 0) {
    Load(std::move(params));
    for (int call = 0; call < 20; ++call) {
      const bool evaluating = call % 5 == 2;
      for (int i = 0; i < kRanks; ++i) {
        v1::RankTelemetry* r = t_.mutable_ranks(i);
        r->set_work_ns(Ns(kStep));
        r->set_last_work_ns(Ns(kStep));
        r->set_silent_ns(Ns(kStep / 2));
        r->set_done(1000 + call * 5 - (evaluating && i == 0 ? lag : 0));
        r->set_waiting(evaluating && i != 0);
        r->set_wait_now_ns(evaluating && i != 0 ? Ns(wait_now) : 0);
        r->set_wait_total_ns(r->wait_total_ns() + (evaluating && i != 0 ? Ns(wait) : 0));
        if (i == 0 && evaluating && pause > 0) {
          r->set_paused_ns(r->paused_ns() + Ns(pause));
          r->set_pauses(r->pauses() + 1);
        }
      }
      Advance(0.5);
      if (auto d = Decide()) return d;
    }
    return std::nullopt;
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

TEST_F(AdaptiveTest, StartsAtSyncOrTheStartParam) {
  Load();
  EXPECT_EQ(t_.policy().active().window(), 0u);
  EXPECT_EQ(t_.policy().active().quorum(), RuleToProto(BarrierParams::Sync()).quorum());
  Load({{"start", "16"}});
  EXPECT_EQ(window(), 16u);
  Load({{"start", "100"}});  // past max_w: no bound, async()
  EXPECT_EQ(t_.policy().active().window(), RuleToProto(BarrierParams::Async()).window());
}

TEST_F(AdaptiveTest, NoStepMeasuredYetKeepsTheRule) {
  Load();
  for (v1::RankTelemetry& r : *t_.mutable_ranks()) {
    r.set_work_ns(0);
    r.set_last_work_ns(0);
  }
  Straggle(3, 10 * kStep);
  for (v1::RankTelemetry& r : *t_.mutable_ranks()) r.set_work_ns(0);
  Derive(&t_);
  EXPECT_EQ(Decide(), std::nullopt);
}

// slow_worker: every rank stalls now and then. A window that binds doubles,
// to at least 32, and past max_w it is async().
TEST_F(AdaptiveTest, ABindingWindowDoublesThenGoesAsync) {
  Load({{"start", "4"}});
  Calm();
  EXPECT_EQ(Decide(), std::nullopt);  // the baseline of the waiting counters
  std::vector<std::string> rules;
  for (int call = 0; call < 4; ++call) {
    StallOnEveryRank(call % kRanks);
    if (auto d = Decide()) rules.push_back(d->text);
  }
  EXPECT_EQ(rules, (std::vector<std::string>{"ssp(32)", "ssp(64)", "async()"}));
  const std::vector<std::string> log = script_->TakeLog();
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log[0], StartsWith("ssp(4) -> ssp(32): step 0.110 s"));
}

TEST_F(AdaptiveTest, WaitingNowWithTheLagPastTheWindowIsEnoughOnTheFirstCall) {
  Load({{"start", "16"}});
  StallOnEveryRank(1);
  for (int i = 0; i < kRanks; ++i) {
    if (i != 1) t_.mutable_ranks(i)->set_wait_now_ns(Ns(0.5));  // longer than a step
  }
  Derive(&t_);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
}

// A slower machine: every finite window binds again behind it, so it is left
// out of the barrier: a quorum of the others, which stays while it is slow.
TEST_F(AdaptiveTest, APersistentStragglerIsLeftOutOfAQuorumAndStays) {
  Load();
  auto d = StraggleUntilPersistent(3, 3 * kStep);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Quorum(3, BarrierParams::kUnbounded));
  EXPECT_THAT(script_->TakeLog().at(0),
              AllOf(StartsWith("sync() -> quorum(3, math.huge)"),
                    HasSubstr("a rank persistently slow"), HasSubstr("1 rank(s) slower")));
  // Nobody waits for it; its lag grows; it is still slow: the quorum stays,
  // however long.
  for (int call = 0; call < 200; ++call) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(i == 3 ? 1000 + call : 1000 + 3 * call);
      r->set_waiting(false);
      r->set_wait_now_ns(0);
      r->set_wait_total_ns(r->wait_total_ns() + (i == 3 ? 0 : Ns(0.03)));  // in-step jitter
    }
    Advance(1);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
}

// A slower rank stays one until its step has been back under 1.15 x the
// median on 4 calls in a row (no flapping at the threshold, nor on one low
// reading of a busy host), and rejoins only when catching up costs the
// others a period at most (lag x step <= the period): then the quorum ends
// in the rule at load, sync(). Further behind it stays out of the quorum,
// where its updates hold nobody back.
TEST_F(AdaptiveTest, TheQuorumEndsWhenTheRankRecoversBelowTheHysteresis) {
  Load();
  ASSERT_EQ(StraggleUntilPersistent(3, 3 * kStep)->rule,
            BarrierParams::Quorum(3, BarrierParams::kUnbounded));
  auto settle = [&](double work, int64_t lag) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_work_ns(Ns(i == 3 ? work : kStep));
      r->set_done(i == 3 ? 1000 : 1000 + lag);
      r->set_waiting(false);
      r->set_wait_now_ns(0);
    }
    Advance(1);
  };
  settle(1.2 * kStep, 8);  // under 1.3 x, over 1.15 x: still slower
  EXPECT_EQ(Decide(), std::nullopt);
  // Under 1.15 x on 3 calls, then one reading above: the count starts over.
  for (int call = 0; call < 3; ++call) {
    settle(1.1 * kStep, 8);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
  settle(1.2 * kStep, 8);
  EXPECT_EQ(Decide(), std::nullopt);
  for (int call = 0; call < 3; ++call) {
    settle(1.1 * kStep, 8);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
  // The 4th in a row, 8 steps of 0.1 s behind: 0.8 s of catching up, under
  // the 1 s period: back to sync().
  settle(1.1 * kStep, 8);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Sync());
  // From a quorum with a rank 30 behind (3 s of catching up): it stays out.
  Load();
  ASSERT_EQ(StraggleUntilPersistent(3, 3 * kStep)->rule,
            BarrierParams::Quorum(3, BarrierParams::kUnbounded));
  for (int call = 0; call < 20; ++call) {
    settle(1.0 * kStep, 30);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
  // Loaded with start = 16, the quorum ends in ssp(16).
  Load({{"start", "16"}});
  ASSERT_EQ(StraggleUntilPersistent(3, 3 * kStep)->rule,
            BarrierParams::Quorum(3, BarrierParams::kUnbounded));
  for (int call = 0; call < 3; ++call) {
    settle(1.0 * kStep, 2);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
  settle(1.0 * kStep, 2);
  d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(16));
}

// Under sync() a snapshot mostly finds the ranks released together (lag 0),
// however long they waited in between: the wait alone binds.
TEST_F(AdaptiveTest, UnderSyncAWaitBindsWhateverTheLag) {
  Load();
  Calm();
  for (v1::RankTelemetry& r : *t_.mutable_ranks()) r.set_done(1000);  // every snapshot level
  Derive(&t_);
  EXPECT_EQ(Decide(), std::nullopt);  // the baseline of the waiting counters
  for (int i = 0; i < kRanks; ++i) {
    v1::RankTelemetry* r = t_.mutable_ranks(i);
    r->set_done(1000);  // level at the snapshot
    r->set_waiting(false);
    r->set_wait_now_ns(0);
    r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.3)));
  }
  Advance(1);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
  // Under a window the same waits with the ranks level do not bind: the
  // window is not what held them.
  Load({{"start", "16"}});
  Calm();
  Decide();
  for (int call = 0; call < 10; ++call) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(1000);
      r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.3)));
    }
    Advance(1);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
}

// A rank whose first steps were slow (libtorch warming up) carries them in
// its EWMA for dozens of steps; its latest step is normal: not persistent,
// so a wait gets a window, not a quorum that leaves a healthy rank out.
TEST_F(AdaptiveTest, ASlowStartInTheEwmaIsNotAPersistentStraggler) {
  Load();
  Calm();
  Decide();
  Straggle(3, 3 * kStep);
  t_.mutable_ranks(3)->set_last_work_ns(Ns(kStep));  // the EWMA is 3 x, its last step 1 x
  Derive(&t_);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
  EXPECT_THAT(script_->TakeLog().at(0), Not(HasSubstr("persistently slow")));
}

// Two slower machines of four: a quorum of the other two.
TEST_F(AdaptiveTest, EverySlowerRankIsLeftOut) {
  Load();
  std::optional<PolicyDecision> d;
  for (int call = 0; call < 3; ++call) {  // persistent on the third call in a row
    const int64_t ahead = std::min<uint32_t>(window(), 1000) + 1;
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      const bool slow = i >= 2;
      r->set_work_ns(Ns(slow ? 3 * kStep : kStep));
      r->set_last_work_ns(Ns(slow ? 3 * kStep : kStep));
      r->set_done(slow ? 1000 : 1000 + ahead);
      r->set_waiting(!slow);
      r->set_wait_now_ns(slow ? 0 : Ns(3 * kStep));  // longer than the median step, 0.2 s
      r->set_wait_total_ns(r->wait_total_ns() + (slow ? 0 : Ns(0.6)));
    }
    Advance(1);
    d = Decide();
  }
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Quorum(2, BarrierParams::kUnbounded));
}

// With many ranks and stalls that come and go, some rank's EWMA is above
// 1.3 x the median at almost every call, a different rank each time: none
// is a slower machine, and no quorum leaves one out (at 64 ranks under
// slow_worker the policy flapped between quorums of 58..63 and sync()).
TEST_F(AdaptiveTest, StallsThatMoveFromRankToRankAreNotASlowerMachine) {
  Load();
  for (int call = 0; call < 12; ++call) {
    const int slow = (call / 2) % kRanks;  // two calls each, then the next rank
    Straggle(slow, 3 * kStep);
    auto d = Decide();
    if (d.has_value()) {
      EXPECT_EQ(d->rule.quorum, BarrierParams::kAllWorkers) << "call " << call << ": a quorum";
    }
  }
  // Held at most two calls for a rank that might be slower, then a window.
  EXPECT_GT(window(), 0u);
}

// Under sync(), waits that stay a small part of the period are the ranks'
// jitter and the CLOCK round trip: SYNC stays.
TEST_F(AdaptiveTest, SyncStaysWhileTheWaitsAreSmall) {
  Load();
  for (int call = 0; call < 25; ++call) {
    Calm();  // in step, 2 % of the time at the barrier
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
  EXPECT_EQ(t_.policy().active().window(), 0u);
}

// A rank that stops (a failure, a long pause) shows as silence; the others
// fill the window and wait: no window helps. Silent 4 steps but less than a
// period it is only suspect and nothing changes (a change made now would
// stay pending behind a stopped rank); silent a whole period, async().
TEST_F(AdaptiveTest, ARankSilentForFourStepsAndAPeriodMakesABindingBarrierAsync) {
  Load();
  Calm();
  Decide();
  auto others_wait = [&] {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(i == 2 ? 1000 : 1001);
      r->set_waiting(i != 2);
      r->set_wait_now_ns(i == 2 ? 0 : Ns(0.3));
      r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.5)));
    }
  };
  others_wait();
  t_.mutable_ranks(2)->set_silent_ns(Ns(4.5 * kStep));  // 0.45 s of a 1 s period: suspect
  Advance(1);
  EXPECT_EQ(Decide(), std::nullopt);
  others_wait();
  t_.mutable_ranks(2)->set_silent_ns(Ns(1.45));  // the whole period: stalled
  Advance(1);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Async());
  EXPECT_THAT(script_->TakeLog().at(0), HasSubstr("a rank stalled"));
}

// The first call has no earlier one to take the waiting since: it counts
// the waits since the job began, over the job's age (its clocks x the median
// iteration), so a job that waited from the start leaves SYNC one period
// sooner; in an old job the same waits are a small share and change nothing.
TEST_F(AdaptiveTest, TheFirstCallCountsTheWaitsSinceTheJobBegan) {
  auto first_call = [&](int64_t done) {
    Load();
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(done);
      r->set_wait_total_ns(i == 2 ? 0 : Ns(0.3));  // 0.3 s at the barrier, waiting for rank 2
    }
    Derive(&t_);
    return Decide();
  };
  auto d = first_call(10);  // 10 clocks of 0.1 s: 30 % of the job's age
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
  EXPECT_EQ(first_call(1000), std::nullopt);  // 0.3 % of 100 s
}

// The start is not a straggler: in real runs every rank waits at clock 1 for
// rank 0's evaluation at step 0 and the first slow steps (the second demo's
// ADAPTIVE left SYNC at its first call, 43 ms of 50 waited at clock 1).
// Calls before every live rank completed 2 clocks, and the call after them,
// only take baselines; then the waits since count.
TEST_F(AdaptiveTest, TheStartsWaitsAreNotJudged) {
  Load({{"horizon", "0.5"}});  // 0.05 s: one period
  auto period = [&](int64_t done, double waited) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(done);
      r->set_wait_total_ns(r->wait_total_ns() + (i == 0 ? 0 : Ns(waited)));
    }
    Advance(0.05);
    return Decide();
  };
  EXPECT_EQ(period(0, 0.2), std::nullopt);     // clock 0: the processes start
  EXPECT_EQ(period(1, 0.045), std::nullopt);   // clock 1: rank 0 evaluates
  EXPECT_EQ(period(4, 0.03), std::nullopt);    // warm now: this call's baseline holds the start
  EXPECT_EQ(period(10, 0.001), std::nullopt);  // calm: SYNC stays
  const auto d = period(16, 0.03);             // a straggler: 60 % of the period waited
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
}

// Until the calls span a horizon, under sync() the waits are judged against
// the time they span, at least a quarter of the horizon (8 iterations): a job
// whose ranks wait half the time from the start leaves SYNC at the second
// call after the start, 4 iterations in (the CNN's job left 0.5-0.85 s in
// while its waits filled a whole horizon), and a single stall of a busy host,
// half a period, does not make it leave (judged per period, it would).
TEST_F(AdaptiveTest, UnderSyncTheFirstWaitsAreJudgedOverAQuarterOfTheHorizon) {
  // Periods of 0.2 s (2 steps of kStep); ranks 1-3 wait `waits[k]` in the k-th
  // period after the start. Returns the period of the first decision and it.
  auto run = [&](const std::vector<double>& waits)
      -> std::optional<std::pair<size_t, PolicyDecision>> {
    SetUp();
    Load({{"horizon", "32"}});  // the default: 3.2 s, a quarter 0.8 s
    int64_t done = 0;
    auto period = [&](double waited) {
      for (int i = 0; i < kRanks; ++i) {
        v1::RankTelemetry* r = t_.mutable_ranks(i);
        r->set_done(done);
        r->set_wait_total_ns(r->wait_total_ns() + (i == 0 ? 0 : Ns(waited)));
      }
      Advance(0.2);
      done += 2;
      return Decide();
    };
    EXPECT_EQ(period(0), std::nullopt);  // clock 0: the start
    EXPECT_EQ(period(0), std::nullopt);  // warm now: this call's baseline holds the start
    for (size_t k = 0; k < waits.size(); ++k) {
      if (auto d = period(waits[k])) return std::make_pair(k, *d);
    }
    return std::nullopt;
  };
  const auto straggler = run({0.1, 0.1, 0.1, 0.1});
  ASSERT_TRUE(straggler.has_value()) << "0.4 s waited of 0.8 s";
  EXPECT_EQ(straggler->first, 1u) << "0.1 s of 0.8 s does not bind yet, 0.2 s does";
  EXPECT_EQ(straggler->second.rule, BarrierParams::Ssp(32));
  EXPECT_EQ(run({0.1, 0, 0, 0, 0, 0}), std::nullopt) << "0.1 s of 0.8 s, then calm";
}

// On a busy host a rank is silent for 4 of its few-ms steps whenever the
// scheduler holds it back: that call changes nothing, and the next one,
// the rank heard again, decides as usual (a window, not async()).
TEST_F(AdaptiveTest, ASilenceShorterThanAPeriodIsATimeSliceNotAStop) {
  Load();
  Calm();
  Decide();
  auto others_wait = [&](double silent) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_done(i == 2 ? 1000 : 1001);
      r->set_waiting(i != 2);
      r->set_wait_now_ns(i == 2 ? 0 : Ns(0.05));
      r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.3)));
    }
    t_.mutable_ranks(2)->set_silent_ns(Ns(silent));
    Advance(1);
  };
  others_wait(5 * kStep);
  EXPECT_EQ(Decide(), std::nullopt);
  others_wait(kStep / 2);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
}

// Under sync() the first binding wait gets a window of 32: a rank that has
// just become slower does not look persistent yet, and a window binds again
// behind it where async() would not. A slow_worker stall (a sleep of at most
// 2 steps, then its own step) is not "stalled".
TEST_F(AdaptiveTest, FromSyncABindingWaitGetsAWindow) {
  Load();
  Calm();
  Decide();
  for (int i = 0; i < kRanks; ++i) {
    v1::RankTelemetry* r = t_.mutable_ranks(i);
    r->set_done(i == 2 ? 1000 : 1001);
    r->set_waiting(i != 2);
    r->set_wait_now_ns(i == 2 ? 0 : Ns(2 * kStep));
    r->set_wait_total_ns(r->wait_total_ns() + (i == 2 ? 0 : Ns(0.3)));
  }
  t_.mutable_ranks(2)->set_silent_ns(Ns(3 * kStep));
  Advance(1);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
  const std::vector<std::string> log = script_->TakeLog();
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log[0], Not(HasSubstr("stalled")));
}

// Rank 0 evaluates the test set for 3 steps every 25 (0.3 s every 2.5 s)
// and under sync() the others wait for it. Judged per period (0.5 s) that
// wait binds and the policy leaves SYNC; over the default horizon of 32
// iterations (3.2 s, at most two evaluations) it is under 20 % and SYNC
// stays. A straggler twice as slow makes the others wait most of each
// period: it binds at once, and is left out once persistent (third call).
TEST_F(AdaptiveTest, AnEvaluationStallBindsPerPeriodButNotOverTheHorizon) {
  const auto per_period = EvaluateEveryFifthPeriod({{"horizon", "5"}}, 0.3, 0.2);
  ASSERT_TRUE(per_period.has_value()) << "0.3 s of 0.5 binds";
  EXPECT_EQ(per_period->rule, BarrierParams::Ssp(32));
  SetUp();
  EXPECT_EQ(EvaluateEveryFifthPeriod({{"horizon", "32"}}, 0.3, 0.2), std::nullopt)
      << "0.3 s of 3.2 does not";

  SetUp();
  Load({{"horizon", "32"}});  // the default
  for (int call = 0; call < 4; ++call) {
    Calm();
    EXPECT_EQ(Decide(), std::nullopt);
  }
  const auto d = StraggleUntilPersistent(3, 2 * kStep);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Quorum(3, BarrierParams::kUnbounded));
}

// The same evaluations, reported by rank 0 as pauses (serene-train's
// ReportPause): under sync() the waits they cause do not make the policy
// leave exact steps, even judged per period; waits beyond what was reported
// still bind. Under a window the waits are the window's, paused or not: a
// pause with the lag past W binds as before.
TEST_F(AdaptiveTest, UnderSyncWaitsForAReportedPauseDoNotBind) {
  EXPECT_EQ(EvaluateEveryFifthPeriod({{"horizon", "5"}}, 0.3, 0.05, 0.3), std::nullopt)
      << "0.3 s of 0.5, all of it rank 0's reported pause";
  SetUp();
  const auto beyond = EvaluateEveryFifthPeriod({{"horizon", "5"}}, 0.3, 0.05, 0.1);
  ASSERT_TRUE(beyond.has_value()) << "0.2 s of 0.5 beyond the reported 0.1 s binds";
  EXPECT_EQ(beyond->rule, BarrierParams::Ssp(32));
  SetUp();
  const auto window = EvaluateEveryFifthPeriod({{"horizon", "5"}, {"start", "8"}}, 0.3, 0.05,
                                               0.3, /*lag=*/9);
  ASSERT_TRUE(window.has_value()) << "under ssp(8) a reported pause with lag 9 binds";
  EXPECT_EQ(window->rule, BarrierParams::Ssp(32));
}

TEST_F(AdaptiveTest, MaxWCapsTheWindowBeforeAsync) {
  Load({{"max_w", "40"}, {"start", "8"}});
  Calm();
  Decide();
  std::vector<std::string> rules;
  for (int call = 0; call < 3; ++call) {
    StallOnEveryRank(call % kRanks);
    if (auto d = Decide()) rules.push_back(d->text);
  }
  EXPECT_EQ(rules, (std::vector<std::string>{"ssp(32)", "async()"}));
}

// Waits while the lag stays within the window are the round trip of a CLOCK
// on a busy host, not the window's doing.
TEST_F(AdaptiveTest, JitterDoesNotGrowTheWindow) {
  Load({{"start", "16"}});
  const double works[kRanks] = {0.1, 0.11, 0.12, 0.125};  // all within 1.3x the median
  for (int call = 0; call < 25; ++call) {
    for (int i = 0; i < kRanks; ++i) {
      v1::RankTelemetry* r = t_.mutable_ranks(i);
      r->set_work_ns(Ns(works[i]));
      r->set_last_work_ns(Ns(works[i] * (call % 2 == 0 ? 1.1 : 0.9)));
      r->set_done(1000 + (i == 3 ? 0 : 3));
      r->set_waiting(i != 3);
      r->set_wait_now_ns(i != 3 ? Ns(0.2) : 0);
      r->set_wait_total_ns(r->wait_total_ns() + Ns(0.3));
    }
    Advance(1);
    EXPECT_EQ(Decide(), std::nullopt) << "call " << call;
  }
}

TEST_F(AdaptiveTest, SwapPendingReturnsNil) {
  Load({{"start", "16"}});
  Calm();
  Decide();
  t_.mutable_policy()->set_swap_pending(true);
  StallOnEveryRank(3);
  EXPECT_EQ(Decide(), std::nullopt);
  t_.mutable_policy()->set_swap_pending(false);
  StallOnEveryRank(3);
  auto d = Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rule, BarrierParams::Ssp(32));
}

// Calm for `hold` seconds: the window halves, never below 4 x the largest
// lag seen meanwhile (so the shrink itself makes nobody wait), and ranks
// that kept in step get sync().
TEST_F(AdaptiveTest, CalmShrinksByHalvesAboveTheLagAndEndsInSync) {
  Load({{"start", "64"}});
  std::vector<std::string> rules;
  double last_change = 0;
  for (int call = 0; call < 200; ++call) {
    Calm();                                               // lag 1
    if (call < 100) t_.mutable_ranks(0)->set_done(1006);  // lag 6 for the first 100 s
    Derive(&t_);
    if (auto d = Decide()) {
      const double now = static_cast<double>(t_.now_ns()) / 1e9;
      EXPECT_GE(now - last_change, 30 - 1e-6) << d->text;
      last_change = now;
      rules.push_back(d->text);
    }
  }
  // 64 -> 32 -> 24 (4 x lag 6) while the lag is 6, then sync() once a whole
  // hold saw the ranks in step.
  EXPECT_EQ(rules, (std::vector<std::string>{"ssp(32)", "ssp(24)", "sync()"}));
}

TEST_F(AdaptiveTest, AsyncShrinksToMaxWWhenCalm) {
  Load({{"start", "1000"}});
  ASSERT_EQ(window(), RuleToProto(BarrierParams::Async()).window());
  std::vector<std::string> rules;
  for (int call = 0; call < 92; ++call) {
    Calm();
    t_.mutable_ranks(0)->set_done(call < 31 ? 1020 : 1010);  // lag 20, then 10
    Derive(&t_);
    if (auto d = Decide()) rules.push_back(d->text);
  }
  // 4 x lag 20 = 80 is past max_w: async stays; after a whole hold with lag
  // 10, max(40, 128 / 2).
  EXPECT_EQ(rules, (std::vector<std::string>{"ssp(64)"}));
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
