// The runtime API end to end: the real serene-switch process serving gRPC,
// driven through RuntimeClient (real channels, real metadata), with real
// worker ranks sending traffic where the test needs it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "control/pause_reporter.h"
#include "control/runtime_client.h"
#include "control/telemetry_convert.h"
#include "loadgen/aggregate_worker.h"
#include "serene/client.h"
#include "testing/switch_process.h"

namespace serene::control {
namespace {

using testing::SwitchProcess;
constexpr const char* kJob = "id=1,workers=2,elements=1000,row=256,key=0x77";

std::unique_ptr<RuntimeClient> Connect(const SwitchProcess& sw, std::string token = "") {
  auto c = RuntimeClient::Create(sw.control_address(), std::move(token));
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(*c);
}

v1::Job NewJob(uint32_t id, uint32_t workers, uint64_t elements) {
  v1::Job j;
  j.set_id(id);
  j.set_workers(workers);
  j.set_elements(elements);
  return j;
}

// Runs `n` ranks of `job` as threads, each aggregating a known pattern for
// `clocks` clocks and checking its final model, and every pull if `exact`
// (loadgen's checked worker).
std::vector<loadgen::WorkerReport> RunRanks(const std::string& address, uint16_t job, uint32_t key,
                                            uint32_t n, uint32_t clocks, bool exact) {
  std::vector<loadgen::WorkerReport> reports(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ClientOptions o;
      o.switch_address = address;
      o.job = job;
      o.key = key;
      o.rank = r;
      o.deadline = std::chrono::seconds(20);
      loadgen::WorkerPlan plan;
      plan.clocks = clocks;
      plan.exact = exact;
      plan.lag = exact ? 0 : loadgen::WorkerPlan::kNoLagBound;
      reports[r] = loadgen::RunAggregateWorker(o, plan);
    });
  }
  for (auto& t : threads) t.join();
  return reports;
}

TEST(RuntimeApi, ListsStaticJobsAndCreatesJobsWithFreshKeys) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  ASSERT_FALSE(sw.control_address().empty()) << sw.output();
  auto api = Connect(sw);

  auto jobs = api->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job().id(), 1u);
  EXPECT_EQ((*jobs)[0].job().workers(), 2u);
  EXPECT_EQ((*jobs)[0].job().policy().text(), "sync");
  EXPECT_EQ((*jobs)[0].low(), -1);

  v1::Job spec = NewJob(9, 2, 300);
  spec.set_row_width(100);
  *spec.mutable_policy() = RuleToProto(dataplane::BarrierParams::Ssp(3));
  spec.set_evict_after_ms(2500);
  auto a = api->CreateJob(spec);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_NE(a->key(), 0u);
  EXPECT_EQ(a->row_width(), 100u);
  EXPECT_EQ(a->scale_log2(), 24u);
  EXPECT_EQ(a->evict_after_ms(), 2500u);
  EXPECT_EQ(a->policy().text(), "ssp:3");
  ASSERT_TRUE(api->DeleteJob(9).ok());
  auto b = api->CreateJob(NewJob(9, 2, 300));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->key(), b->key()) << "each job gets a fresh key";
  EXPECT_EQ(b->evict_after_ms(), 10000u) << "the default";

  // The key works: a rank joins the created job with it, and not without it.
  ClientOptions o;
  o.switch_address = sw.address();
  o.job = 9;
  o.key = b->key();
  o.deadline = std::chrono::seconds(5);
  auto client = Client::Connect(o);
  ASSERT_TRUE(client.ok());
  auto info = (*client)->Join();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->elements, 300u);
  o.key = b->key() + 1;
  o.deadline = std::chrono::milliseconds(300);
  auto stranger = Client::Connect(o);
  ASSERT_TRUE(stranger.ok());
  EXPECT_FALSE((*stranger)->Join().ok());

  auto t = api->GetTelemetry(9);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->ranks(0).joined());
  EXPECT_FALSE(t->ranks(1).joined());
  EXPECT_EQ(t->ranks(1).silent_ns(), -1);
}

TEST(RuntimeApi, BadArgumentsAreRefusedNamingTheFieldAndChangeNothing) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);

  struct Case {
    v1::Job job;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back({NewJob(0, 2, 10), "job.id 0"});
  cases.push_back({NewJob(5, 0, 10), "job.workers 0"});
  cases.push_back({NewJob(5, 2000, 10), "job.workers 2000"});
  cases.push_back({NewJob(5, 2, 0), "job.elements 0"});
  v1::Job keyed = NewJob(5, 2, 10);
  keyed.set_key(42);
  cases.push_back({keyed, "job.key 42"});
  v1::Job wide = NewJob(5, 2, 10);
  wide.set_row_width(20000);
  cases.push_back({wide, "job.row_width 20000"});
  v1::Job quorum = NewJob(5, 2, 10);
  quorum.mutable_policy()->set_quorum(3);
  cases.push_back({quorum, "job.policy.quorum 3"});
  for (const Case& c : cases) {
    auto r = api->CreateJob(c.job);
    ASSERT_FALSE(r.ok()) << c.needle;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << r.status().message();
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
  auto dup = api->CreateJob(NewJob(1, 2, 10));
  EXPECT_EQ(dup.status().code(), Status::Code::kAlreadyExists) << dup.status().message();
  // Larger than this host's memory: refused up front, the switch lives on.
  auto huge = api->CreateJob(NewJob(6, 256, 1ull << 31));
  EXPECT_EQ(huge.status().code(), Status::Code::kResourceExhausted) << huge.status().message();
  EXPECT_NE(huge.status().message().find("MiB"), std::string::npos) << huge.status().message();

  auto jobs = api->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u) << "nothing was created";

  // Policy, eviction and ids.
  v1::Rule too_many;
  too_many.set_quorum(7);
  auto sp = api->SetPolicy(1, too_many, std::nullopt);
  EXPECT_EQ(sp.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(sp.status().message().find("rule.quorum 7"), std::string::npos)
      << sp.status().message();
  EXPECT_EQ(api->SetPolicy(2, too_many, std::nullopt).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(api->Evict(1, 5).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(api->Evict(70000, 0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(api->GetPolicy(0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(api->Finish(3).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(api->DeleteJob(3).code(), Status::Code::kNotFound);
  auto policy = api->GetPolicy(1);
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(policy->active().text(), "sync");
  EXPECT_FALSE(policy->swap_pending());
  EXPECT_EQ(policy->active_epoch(), 0u);
}

TEST(RuntimeApi, SetPolicyInstallsInTheIdleBankAndRefusesASecondChangeUntilRetired) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);

  auto r = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Ssp(4)), 5);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->epoch(), 1u);
  EXPECT_EQ(r->effective_clock(), 5u);
  auto p = api->GetPolicy(1);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->swap_pending());
  EXPECT_EQ(p->next().text(), "ssp:4");
  EXPECT_EQ(p->swap_clock(), 5u);
  EXPECT_EQ(p->active().text(), "sync");

  auto again = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Async()), std::nullopt);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("has not retired"), std::string::npos)
      << again.status().message();

  // Ranks run past clock 5: the change retires and the next one is taken.
  auto reports = RunRanks(sw.address(), 1, 0x77, 2, 8, /*exact=*/false);
  for (const auto& rep : reports) ASSERT_TRUE(rep.ok) << rep.error;
  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->policy().swap_pending());
  EXPECT_EQ(t->policy().active().text(), "ssp:4");
  EXPECT_EQ(t->counters().swaps(), 1u);
  auto early = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Sync()), 3);
  EXPECT_EQ(early.status().code(), Status::Code::kFailedPrecondition) << "clock 3 was released";
  EXPECT_NE(early.status().message().find("too early"), std::string::npos);
  auto later = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Sync()), std::nullopt);
  ASSERT_TRUE(later.ok()) << later.status().message();
  EXPECT_EQ(later->epoch(), 2u);
}

TEST(RuntimeApi, AChangeBeyondTheHorizonIsRefusedAndAPendingOneCanBeCancelled) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);

  // Issue 31: this used to stay pending for ever and block every change.
  auto far = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Ssp(10)), 2147483647);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(far.status().message().find("effective clock 2147483647 is beyond the horizon"),
            std::string::npos)
      << far.status().message();

  ASSERT_TRUE(api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Async()), 3).ok());
  auto wrong = api->CancelPolicyChange(1, 5u);
  EXPECT_EQ(wrong.status().code(), Status::Code::kInvalidArgument) << wrong.status().message();
  auto cancelled = api->CancelPolicyChange(1, 1u);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().message();
  EXPECT_EQ(cancelled->epoch(), 1u);
  EXPECT_EQ(cancelled->effective_clock(), 3u);
  EXPECT_EQ(cancelled->rule().text(), "async");
  auto p = api->GetPolicy(1);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->swap_pending());
  EXPECT_EQ(p->active().text(), "sync");

  // SYNC still judges every clock: every pull is exact.
  auto reports = RunRanks(sw.address(), 1, 0x77, 2, 8, /*exact=*/true);
  for (const auto& rep : reports) ASSERT_TRUE(rep.ok) << rep.error;
  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->counters().swaps(), 0u);
  EXPECT_EQ(t->policy().active_epoch(), 0u);
  auto none = api->CancelPolicyChange(1, std::nullopt);
  EXPECT_EQ(none.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("no policy change is pending"), std::string::npos);
  auto next = api->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Ssp(2)), std::nullopt);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->epoch(), 2u) << "a cancelled epoch is not reused";
  EXPECT_EQ(api->CancelPolicyChange(9, std::nullopt).status().code(), Status::Code::kNotFound);
}

TEST(RuntimeApi, TokenIsRequiredAndCheckedAndRefusalsChangeNothing) {
  const auto dir = std::filesystem::temp_directory_path() / ("serene-token-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string token_file = (dir / "token").string();
  std::ofstream(token_file) << "  s3cret-token-0123456789\n";
  std::filesystem::permissions(token_file, std::filesystem::perms::owner_read);  // private
  SwitchProcess sw({"--job", kJob, "--token-file", token_file, "--metrics", "127.0.0.1:0"});
  ASSERT_TRUE(sw.ok()) << sw.output();

  auto none = Connect(sw);
  auto listed = none->ListJobs();
  EXPECT_EQ(listed.status().code(), Status::Code::kUnauthenticated) << listed.status().message();
  EXPECT_NE(listed.status().message().find("requires a token"), std::string::npos);
  auto wrong = Connect(sw, "s3cret-token-012345678X");
  EXPECT_EQ(wrong->CreateJob(NewJob(4, 1, 10)).status().code(), Status::Code::kUnauthenticated);
  EXPECT_EQ(wrong->Finish(1).status().code(), Status::Code::kUnauthenticated);
  EXPECT_EQ(wrong->SetPolicy(1, RuleToProto(dataplane::BarrierParams::Async()), std::nullopt)
                .status()
                .code(),
            Status::Code::kUnauthenticated);
  Status streamed = wrong->StreamTelemetry(1, std::chrono::milliseconds(50),
                                           [](const v1::JobTelemetry&) { return true; });
  EXPECT_EQ(streamed.code(), Status::Code::kUnauthenticated) << streamed.message();

  auto right = Connect(sw, "s3cret-token-0123456789");
  auto jobs = right->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u) << "the refused CreateJob created nothing";
  EXPECT_FALSE((*jobs)[0].finished()) << "the refused Finish did nothing";
  EXPECT_EQ((*jobs)[0].job().policy().text(), "sync");

  // The refusals are counted, in the operator's metrics.
  const std::string out = sw.output();
  const size_t at = out.find("metrics at http://");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string url = out.substr(at + 18, out.find("/metrics", at) - at - 18);
  const size_t colon = url.rfind(':');
  httplib::Client http(url.substr(0, colon), std::stoi(url.substr(colon + 1)));
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("serene_control_unauthenticated_total 5"), std::string::npos)
      << res->body.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

TEST(RuntimeApi, NonLoopbackControlWithoutATokenIsRefusedAtStart) {
  SwitchProcess sw({"--job", kJob, "--control", "0.0.0.0:0"});
  EXPECT_FALSE(sw.ok());
  EXPECT_EQ(sw.Stop(), 2);
  EXPECT_NE(sw.output().find("not a loopback address"), std::string::npos) << sw.output();
}

TEST(RuntimeApi, ConcurrentCallsWhileTrafficFlowsAndTelemetryStreams) {
  SwitchProcess sw({"--job", "id=3,workers=4,elements=5000,row=256,key=0x33"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0}, failures{0};
  std::vector<std::thread> pollers;
  for (int i = 0; i < 3; ++i) {
    pollers.emplace_back([&, i] {
      while (!stop.load()) {
        bool ok = i == 0 ? api->GetTelemetry(3).ok()
                  : i == 1 ? api->ListJobs().ok()
                           : api->GetPolicy(3).ok();
        ++calls;
        if (!ok) ++failures;
      }
    });
  }
  std::vector<int64_t> highs;
  std::thread streamer([&] {
    Status s = api->StreamTelemetry(3, std::chrono::milliseconds(20), [&](const v1::JobTelemetry& t) {
      highs.push_back(t.high());
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.message();
  });

  auto reports = RunRanks(sw.address(), 3, 0x33, 4, 150, /*exact=*/true);
  api->CancelStreams();
  streamer.join();
  stop = true;
  for (auto& t : pollers) t.join();

  for (const auto& rep : reports) {
    EXPECT_TRUE(rep.ok) << "rank " << rep.rank << ": " << rep.error;
    EXPECT_EQ(rep.pulls_checked, 151u) << "every pull was exact under SYNC";
  }
  EXPECT_GT(calls.load(), 50u);
  EXPECT_EQ(failures.load(), 0u);
  ASSERT_GT(highs.size(), 3u);
  for (size_t i = 1; i < highs.size(); ++i) EXPECT_GE(highs[i], highs[i - 1]);

  auto t = api->GetTelemetry(3);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->ranks_size(), 4);
  for (const auto& r : t->ranks()) {
    EXPECT_GE(r.done(), 150) << "rank " << r.rank();
    EXPECT_GT(r.iter_ns(), 0u);
    EXPECT_GT(r.work_ns(), 0u);
    EXPECT_GT(r.counters().clocks(), 150u);
    EXPECT_FALSE(r.address().empty());
  }
  EXPECT_GT(t->counters().rx_by_op().at("INC"), 0u);
}

TEST(RuntimeApi, StreamEndsWithNotFoundWhenTheJobIsDeleted) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);
  int snapshots = 0;
  std::thread deleter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(api->DeleteJob(1).ok());
  });
  Status s = api->StreamTelemetry(1, std::chrono::milliseconds(20), [&](const v1::JobTelemetry&) {
    ++snapshots;
    return true;
  });
  deleter.join();
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.message();
  EXPECT_GT(snapshots, 2);
  EXPECT_EQ(api->StreamTelemetry(1, std::chrono::milliseconds(5), [](const v1::JobTelemetry&) {
                 return true;
               }).code(),
            Status::Code::kInvalidArgument);
}

// A rank's pauses add up per rank, show in its telemetry, are refused with
// the field named when out of range (changing nothing), and are gone with the
// job they were reported for.
TEST(RuntimeApi, ReportedPausesAddUpPerRankAndGoWithTheJob) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Connect(sw);
  auto first = api->ReportPause(1, 0, std::chrono::milliseconds(40));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->paused_ns(), 40'000'000u);
  EXPECT_EQ(first->pauses(), 1u);
  auto second = api->ReportPause(1, 0, std::chrono::milliseconds(25));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->paused_ns(), 65'000'000u);
  EXPECT_EQ(second->pauses(), 2u);

  auto bad_rank = api->ReportPause(1, 2, std::chrono::milliseconds(1));
  EXPECT_EQ(bad_rank.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad_rank.status().message().find("rank 2: job 1 has ranks 0..1"), std::string::npos)
      << bad_rank.status().message();
  auto zero = api->ReportPause(1, 1, std::chrono::nanoseconds(0));
  EXPECT_EQ(zero.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("pause_ns 0"), std::string::npos)
      << zero.status().message();
  EXPECT_EQ(api->ReportPause(1, 1, std::chrono::hours(2)).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(api->ReportPause(4, 0, std::chrono::milliseconds(1)).status().code(),
            Status::Code::kNotFound);

  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ranks(0).paused_ns(), 65'000'000u);
  EXPECT_EQ(t->ranks(0).pauses(), 2u);
  EXPECT_EQ(t->ranks(1).paused_ns(), 0u) << "the refused reports changed nothing";
  EXPECT_EQ(t->ranks(1).pauses(), 0u);

  // A job deleted and created again under the same id starts from nothing.
  ASSERT_TRUE(api->DeleteJob(1).ok());
  ASSERT_TRUE(api->CreateJob(NewJob(1, 2, 10)).ok());
  auto fresh = api->GetTelemetry(1);
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_EQ(fresh->ranks(0).paused_ns(), 0u);
  EXPECT_EQ(fresh->ranks(0).pauses(), 0u);
}

// serene-train's reporter: its reports reach the switch; once the switch is
// gone it stops calling after kMaxFailures failures in a row (each bounded by
// its timeout), so a rank trains on without paying for a dead API.
TEST(RuntimeApi, APauseReporterReportsAndStopsAfterFailuresInARow) {
  auto sw = std::make_unique<SwitchProcess>(std::vector<std::string>{"--job", kJob});
  ASSERT_TRUE(sw->ok()) << sw->output();
  auto reporter = PauseReporter::Create(sw->control_address(), "", 1, 1,
                                        std::chrono::milliseconds(500));
  ASSERT_TRUE(reporter.ok()) << reporter.status().message();
  (*reporter)->Report(0.04);
  (*reporter)->Report(0);  // not a pause: not sent
  EXPECT_EQ((*reporter)->reported(), 1u);
  auto t = Connect(*sw)->GetTelemetry(1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ranks(1).pauses(), 1u);
  EXPECT_EQ(t->ranks(1).paused_ns(), 40'000'000u);

  sw->Kill();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < PauseReporter::kMaxFailures + 2; ++i) (*reporter)->Report(0.04);
  EXPECT_TRUE((*reporter)->stopped());
  EXPECT_EQ((*reporter)->failures(), static_cast<uint64_t>(PauseReporter::kMaxFailures))
      << "no call after the last failure in a row";
  EXPECT_EQ((*reporter)->reported(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RuntimeApi, AClientOfADeadSwitchFailsWithinItsTimeout) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  const std::string address = sw.control_address();
  sw.Kill();
  auto api = RuntimeClient::Create(address, "", std::chrono::milliseconds(500));
  ASSERT_TRUE(api.ok());
  const auto start = std::chrono::steady_clock::now();
  auto r = (*api)->ListJobs();
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace serene::control
