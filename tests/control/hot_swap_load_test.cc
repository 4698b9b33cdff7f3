// Hot swap under load, end to end: four real ranks aggregate a known pattern
// through the real serene-switch (with and without injected faults) while the
// controller, running a Lua policy, changes the rule SYNC -> SSP(10) -> ASYNC
// -> QUORUM(3,1) -> SYNC mid-run through the runtime API. Checked from what
// the ranks saw (DESIGN.md §4 "Hot swap"):
//   - the RELEASEs of one clock never carry two epochs;
//   - no rank is released beyond the rule in force (c - low <= the bound);
//   - no waiter is stranded: every rank completes every clock;
//   - every INC applied once: the final model is the exact sum, and every
//     pull between two SYNC-judged releases is exactly the model of its clock;
//   - with faults, that they fired (testing/fault_check.h).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "control/controller.h"
#include "control/policy_script.h"
#include "control/runtime_client.h"
#include "loadgen/aggregate_worker.h"
#include "serene/client.h"
#include "testing/fault_check.h"
#include "testing/switch_process.h"

namespace serene::control {
namespace {

using dataplane::BarrierParams;
using testing::SwitchProcess;

constexpr uint32_t kRanks = 4;
constexpr uint32_t kClocks = 240;
constexpr uint64_t kElements = 3000;

// One phase after the other, each once the previous one is in force and the
// fastest rank passed its clock.
constexpr const char* kPolicy = R"lua(
local phases = { {0, sync()}, {30, ssp(10)}, {70, async()}, {110, quorum(3, 1)}, {150, sync()} }
local cur = 1
function on_telemetry(t)
  if t.swap_pending then return nil end
  if t.rule == phases[cur][2] and cur < #phases and t.high >= phases[cur + 1][1] then
    cur = cur + 1
  end
  return phases[cur][2]
end
)lua";

struct Release {
  uint32_t epoch;
  uint32_t low;
};

struct RankLog {
  std::string error;
  std::map<uint32_t, Release> releases;  // by clock
  std::map<uint32_t, bool> pull_exact;   // by clock: matched the exact model of that clock
  bool final_exact = false;
  uint64_t retransmissions = 0;  // READs, CLOCKs and INC rows the client sent again
};

// Clocks the last phase (SYNC again) lasts at least, so that its exact pulls
// are checked however late the controller installs it (a slow, sanitized
// build installs the phases well after their thresholds).
constexpr int64_t kLastPhaseClocks = 45;

// `last_phase_from`: the first clock of the last phase once it is installed, else -1.
void RunRank(const std::string& address, uint32_t rank,
             const std::atomic<int64_t>* last_phase_from, RankLog* log) {
  ClientOptions o;
  o.switch_address = address;
  o.job = 1;
  o.key = 0x44;
  o.rank = rank;
  o.deadline = std::chrono::seconds(30);
  auto connected = Client::Connect(o);
  if (!connected.ok()) {
    log->error = connected.status().message();
    return;
  }
  Client& c = **connected;
  auto info = c.Join();
  if (!info.ok()) {
    log->error = info.status().message();
    return;
  }
  std::vector<int32_t> model(kElements), update(kElements);
  std::vector<int64_t> expect(kElements);
  for (size_t i = 0; i < kElements; ++i) expect[i] = loadgen::Seed(i);
  if (rank == 0) {
    for (size_t i = 0; i < kElements; ++i) update[i] = loadgen::Seed(i);
    if (Status s = c.PushFixed(update); !s.ok()) {
      log->error = s.message();
      return;
    }
  }
  auto seeded = c.Clock();
  if (!seeded.ok()) {
    log->error = seeded.status().message();
    return;
  }
  log->releases[0] = {seeded->epoch, seeded->low};
  uint32_t low = seeded->low;
  // The pattern for kClocks clocks, then zero updates until every rank
  // completed the last clock and the last phase has lasted kLastPhaseClocks.
  auto more = [&](uint32_t clock) {
    const int64_t from = last_phase_from->load();
    return clock <= kClocks || static_cast<int32_t>(low - kClocks) < 0 || from < 0 ||
           int64_t{low} < from + kLastPhaseClocks;
  };
  for (uint32_t clock = 1; more(clock); ++clock) {
    if (rank == kRanks - 1) std::this_thread::sleep_for(std::chrono::microseconds(1500));
    if (Status s = c.PullFixed(model); !s.ok()) {
      log->error = "pull at clock " + std::to_string(clock) + ": " + s.message();
      return;
    }
    bool exact = true;
    for (size_t i = 0; i < kElements && exact; ++i) exact = model[i] == expect[i];
    log->pull_exact[clock] = exact;
    for (size_t i = 0; i < kElements; ++i) {
      update[i] = clock <= kClocks ? loadgen::Delta(rank, clock, i) : 0;
    }
    if (Status s = c.PushFixed(update); !s.ok()) {
      log->error = "push at clock " + std::to_string(clock) + ": " + s.message();
      return;
    }
    auto r = c.Clock();
    if (!r.ok()) {
      log->error = "clock " + std::to_string(clock) + ": " + r.status().message();
      return;
    }
    log->releases[clock] = {r->epoch, r->low};
    low = r->low;
    if (clock <= kClocks) {
      for (uint32_t w = 0; w < kRanks; ++w) {
        for (size_t i = 0; i < kElements; ++i) expect[i] += loadgen::Delta(w, clock, i);
      }
    }
  }
  if (Status s = c.PullFixed(model); !s.ok()) {
    log->error = "final pull: " + s.message();
    return;
  }
  log->final_exact = true;
  for (size_t i = 0; i < kElements; ++i) log->final_exact &= model[i] == expect[i];
  (void)c.Leave(false);
  const ClientStats& st = c.stats();
  log->retransmissions = st.read_retransmits + st.clock_retransmits + st.rows_resent;
}

class HotSwapUnderLoad : public ::testing::TestWithParam<std::string> {};

TEST_P(HotSwapUnderLoad, PhasesChangeConsistentlyWhileRanksRun) {
  std::vector<std::string> args = {
      "--job", "id=1,workers=4,elements=3000,row=256,key=0x44,policy=sync,evict_after=0"};
  if (!GetParam().empty()) args.insert(args.end(), {"--fault", GetParam()});
  SwitchProcess sw(args);
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = RuntimeClient::Create(sw.control_address(), "");
  ASSERT_TRUE(api.ok());
  auto script = PolicyScript::LoadString(kPolicy, "phases.lua", {});
  ASSERT_TRUE(script.ok()) << script.status().message();

  std::atomic<int64_t> last_phase_from{-1};
  std::mutex events_mu;
  std::vector<std::string> problems;
  ControllerOptions co;
  co.job = 1;
  co.period = std::chrono::milliseconds(10);
  co.on_event = [&](const ControllerEvent& e) {
    std::lock_guard lock(events_mu);
    if (e.kind == ControllerEvent::Kind::kApplied && e.epoch == 4) {
      last_phase_from = e.effective_clock;
    }
    if (e.kind == ControllerEvent::Kind::kScriptError ||
        e.kind == ControllerEvent::Kind::kRefused) {
      problems.push_back(e.message);
    }
  };
  Controller controller(api->get(), script->get(), co);
  Status controller_status;
  std::thread control([&] { controller_status = controller.Run(); });

  std::vector<RankLog> logs(kRanks);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] { RunRank(sw.address(), r, &last_phase_from, &logs[r]); });
  }
  for (auto& t : ranks) t.join();
  controller.Stop();
  control.join();
  EXPECT_TRUE(controller_status.ok()) << controller_status.message();
  EXPECT_TRUE(problems.empty()) << problems.front();

  // The rule of each epoch, from what the controller installed.
  std::map<uint32_t, BarrierParams> rule_of = {{0, BarrierParams::Sync()}};
  for (const ControllerEvent& e : controller.applied()) {
    auto p = BarrierParams::Parse(e.rule_text);
    ASSERT_TRUE(p.ok()) << e.rule_text;
    rule_of[e.epoch] = *p;
  }
  std::string applied;
  for (const ControllerEvent& e : controller.applied()) {
    applied += " epoch " + std::to_string(e.epoch) + " = " + e.rule_text + ";";
  }
  ASSERT_EQ(rule_of.size(), 5u) << "every phase was applied once; applied:" << applied;
  EXPECT_EQ(rule_of[1], BarrierParams::Ssp(10));
  EXPECT_EQ(rule_of[2], BarrierParams::Async());
  EXPECT_EQ(rule_of[3], BarrierParams::Quorum(3, 1));
  EXPECT_EQ(rule_of[4], BarrierParams::Sync());

  std::map<uint32_t, uint32_t> epoch_of_clock;
  uint64_t checked_pulls = 0;
  for (uint32_t r = 0; r < kRanks; ++r) {
    const RankLog& log = logs[r];
    ASSERT_TRUE(log.error.empty()) << "rank " << r << ": " << log.error << "\n" << sw.output();
    EXPECT_TRUE(log.final_exact) << "rank " << r << ": the final model is not the exact sum";
    ASSERT_GE(log.releases.size(), kClocks + 1) << "rank " << r;
    uint32_t last_epoch = 0;
    for (const auto& [clock, rel] : log.releases) {
      // One epoch per clock, across ranks.
      auto [it, fresh] = epoch_of_clock.emplace(clock, rel.epoch);
      EXPECT_EQ(it->second, rel.epoch) << "clock " << clock << " released by two epochs";
      EXPECT_GE(rel.epoch, last_epoch) << "rank " << r << " clock " << clock;
      last_epoch = rel.epoch;
      // Never beyond the rule in force.
      ASSERT_TRUE(rule_of.count(rel.epoch)) << "unknown epoch " << rel.epoch;
      const BarrierParams& p = rule_of[rel.epoch];
      const int64_t lead = static_cast<int64_t>(clock) - static_cast<int64_t>(rel.low);
      if (p.lag != BarrierParams::kUnbounded) {
        EXPECT_LE(lead, int64_t{p.lag}) << "rank " << r << " clock " << clock << " under "
                                        << p.ToString();
      }
      if (p.quorum == BarrierParams::kAllWorkers && p.window != BarrierParams::kUnbounded) {
        EXPECT_LE(lead, int64_t{p.window}) << "rank " << r << " clock " << clock;
      }
    }
    // Exact pulls between two SYNC-judged releases.
    for (const auto& [clock, exact] : log.pull_exact) {
      auto before = log.releases.find(clock - 1), after = log.releases.find(clock);
      if (before == log.releases.end() || after == log.releases.end()) continue;
      if (!rule_of[before->second.epoch].Exact(kRanks) ||
          !rule_of[after->second.epoch].Exact(kRanks)) {
        continue;
      }
      EXPECT_TRUE(exact) << "rank " << r << ": pull at clock " << clock << " under SYNC";
      ++checked_pulls;
    }
  }
  EXPECT_GT(checked_pulls, 40u * kRanks) << "SYNC phases were checked";

  // The faults fired, and where packets were lost the ranks sent them again.
  if (!GetParam().empty()) {
    EXPECT_EQ(sw.Stop(), 0) << sw.output();
    uint64_t retransmissions = 0;
    for (const RankLog& log : logs) retransmissions += log.retransmissions;
    testing::ExpectFaultsFired(GetParam(), testing::ParseInjectorReport(sw.output()),
                               retransmissions, sw.output());
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, HotSwapUnderLoad,
                         ::testing::Values("", "drop=0.01,seed=7,dir=both",
                                           "dup=0.02,reorder=0.02,seed=3,dir=rx"),
                         [](const auto& param) {
                           return param.index == 0   ? std::string("clean")
                                  : param.index == 1 ? std::string("drop")
                                                     : std::string("dup_reorder");
                         });

}  // namespace
}  // namespace serene::control
