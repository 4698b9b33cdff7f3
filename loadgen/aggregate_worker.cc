#include "loadgen/aggregate_worker.h"

#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/stats_json.h"
#include "loadgen/update_code.h"

namespace serene::loadgen {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int32_t Seed(size_t i) { return UpdateCode::Seed(i); }

int32_t Delta(uint32_t rank, uint32_t clock, size_t i) {
  return static_cast<int32_t>((uint64_t{rank} * 7919 + uint64_t{clock} * 104729 + i * 31) % 2001) -
         1000;
}

WorkerReport RunAggregateWorker(const ClientOptions& options, const WorkerPlan& plan) {
  WorkerReport rep;
  rep.rank = options.rank;
  const auto started = SteadyClock::now();
  auto fail = [&](const std::string& what) {
    rep.ok = false;
    rep.error = what;
    rep.seconds = Seconds(SteadyClock::now() - started);
    return rep;
  };

  auto connected = Client::Connect(options);
  if (!connected.ok()) return fail(connected.status().message());
  Client& c = **connected;
  auto info = c.Join();
  if (!info.ok()) return fail(info.status().message());
  const size_t n = info->elements;
  rep.elements = n;
  if (info->done != 0xFFFFFFFFu) {
    return fail("job " + std::to_string(options.job) + " is not fresh (rank " +
                std::to_string(options.rank) + " already completed clock " +
                std::to_string(info->done) + "); restart the switch or use another job id");
  }

  if (plan.clocks > UpdateCode::kMaxClocks) {
    return fail("at most " + std::to_string(UpdateCode::kMaxClocks) +
                " clocks: the encoded updates' sums must fit int32");
  }
  const UpdateCode code(info->workers, n, info->row_width, plan.clocks);

  // Seed: rank 0 INCs the initial model at clock 0.
  std::vector<int32_t> model(n), update(n);
  if (options.rank == 0) {
    for (size_t i = 0; i < n; ++i) update[i] = UpdateCode::Seed(i);
    Status s = c.PushFixed(update);
    if (!s.ok()) return fail(s.message());
  }
  auto seeded = c.Clock();
  if (!seeded.ok()) return fail(seeded.status().message());
  uint32_t low = seeded->low;

  for (uint32_t clock = 1; clock <= plan.clocks; ++clock) {
    if (plan.straggle.count() > 0) std::this_thread::sleep_for(plan.straggle);
    Status s = c.PullFixed(model);
    if (!s.ok()) return fail(s.message());
    const std::string bad = code.Check(model, options.rank, code.Bounds(clock, plan.exact, plan.lag));
    if (!bad.empty()) return fail("pull at clock " + std::to_string(clock) + ": " + bad);
    ++rep.pulls_checked;
    code.Update(options.rank, clock, update);
    s = c.PushFixed(update);
    if (!s.ok()) return fail(s.message());
    auto r = c.Clock();
    if (!r.ok()) return fail(r.status().message());
    rep.max_lead = std::max<int64_t>(rep.max_lead, static_cast<int32_t>(r->clock - r->low));
    low = r->low;
    ++rep.clocks;
  }

  // Drain: zero updates until every rank completed the last clock.
  std::fill(update.begin(), update.end(), 0);
  while (static_cast<int32_t>(low - plan.clocks) < 0) {
    Status s = c.PushFixed(update);
    if (!s.ok()) return fail(s.message());
    auto r = c.Clock();
    if (!r.ok()) return fail(r.status().message());
    low = r->low;
  }
  Status s = c.PullFixed(model);
  if (!s.ok()) return fail(s.message());
  const std::string bad = code.Check(model, options.rank, {plan.clocks, plan.clocks, plan.clocks});
  if (!bad.empty()) return fail("final model: " + bad);
  ++rep.pulls_checked;
  s = c.Leave(false);
  if (!s.ok()) return fail(s.message());

  rep.ok = true;
  rep.seconds = Seconds(SteadyClock::now() - started);
  rep.stats = c.stats();
  rep.pull_seconds = Seconds(rep.stats.pull_time);
  rep.push_seconds = Seconds(rep.stats.push_time);
  rep.clock_wait_seconds = Seconds(rep.stats.clock_wait);
  return rep;
}

std::string WorkerReport::ToJson() const {
  nlohmann::json j = {
      {"rank", rank}, {"ok", ok}, {"error", error}, {"clocks", clocks},
      {"pulls_checked", pulls_checked}, {"elements", elements}, {"seconds", seconds},
      {"pull_seconds", pull_seconds}, {"push_seconds", push_seconds},
      {"clock_wait_seconds", clock_wait_seconds}, {"max_lead", max_lead}};
  StatsToJson(stats, &j);
  return j.dump();
}

Result<WorkerReport> WorkerReport::FromJson(const std::string& line) {
  try {
    auto j = nlohmann::json::parse(line);
    WorkerReport r;
    r.rank = j.at("rank");
    r.ok = j.at("ok");
    r.error = j.at("error");
    r.clocks = j.at("clocks");
    r.pulls_checked = j.at("pulls_checked");
    r.elements = j.at("elements");
    r.seconds = j.at("seconds");
    r.pull_seconds = j.at("pull_seconds");
    r.push_seconds = j.at("push_seconds");
    r.clock_wait_seconds = j.at("clock_wait_seconds");
    r.max_lead = j.at("max_lead");
    StatsFromJson(j, &r.stats);
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("bad worker report: ") + e.what());
  }
}

}  // namespace serene::loadgen
