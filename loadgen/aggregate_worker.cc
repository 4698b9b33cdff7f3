#include "loadgen/aggregate_worker.h"

#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/stats_json.h"

namespace serene::loadgen {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// First index where `got` differs from `want`, or -1.
int64_t FirstMismatch(const std::vector<int32_t>& got, const std::vector<int64_t>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (int64_t{got[i]} != want[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

int32_t Seed(size_t i) { return static_cast<int32_t>(i % 1000) - 500; }

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

  // Seed: rank 0 INCs the initial model at clock 0.
  std::vector<int32_t> model(n), update(n);
  std::vector<int64_t> expect(n);
  for (size_t i = 0; i < n; ++i) expect[i] = Seed(i);
  if (options.rank == 0) {
    for (size_t i = 0; i < n; ++i) update[i] = Seed(i);
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
    if (plan.check_every_pull) {
      const int64_t bad = FirstMismatch(model, expect);
      if (bad >= 0) {
        return fail("pull at clock " + std::to_string(clock) + ": element " +
                    std::to_string(bad) + " is " + std::to_string(model[bad]) + ", expected " +
                    std::to_string(expect[bad]));
      }
      ++rep.pulls_checked;
    }
    for (size_t i = 0; i < n; ++i) update[i] = Delta(options.rank, clock, i);
    s = c.PushFixed(update);
    if (!s.ok()) return fail(s.message());
    auto r = c.Clock();
    if (!r.ok()) return fail(r.status().message());
    rep.max_lead = std::max<int64_t>(rep.max_lead, static_cast<int32_t>(r->clock - r->low));
    low = r->low;
    ++rep.clocks;
    for (uint32_t w = 0; w < info->workers; ++w) {
      for (size_t i = 0; i < n; ++i) expect[i] += Delta(w, clock, i);
    }
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
  const int64_t bad = FirstMismatch(model, expect);
  if (bad >= 0) {
    return fail("final model: element " + std::to_string(bad) + " is " +
                std::to_string(model[bad]) + ", expected " + std::to_string(expect[bad]));
  }
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
