#include "loadgen/comm_bench.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "collective/gloo_group.h"
#include "loadgen/stats_json.h"

namespace serene::loadgen {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// CPU seconds this process (all its threads) has used.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The pattern: rank w contributes Base(c, i) + w * Weight(i) at iteration c,
// so the sum over N ranks is N * Base + N(N-1)/2 * Weight, checkable in one
// pass; a lost, doubled or misplaced row shows up in it.
int32_t Base(uint32_t c, size_t i) { return static_cast<int32_t>((i * 7 + c * 13) & 1023) - 512; }
int32_t Weight(size_t i) { return 1 + static_cast<int32_t>(i & 3); }
int32_t SeedValue(size_t i) { return static_cast<int32_t>(i % 1000) - 500; }

void Fill(uint32_t rank, uint32_t c, std::vector<int32_t>* v) {
  const int32_t w = static_cast<int32_t>(rank);
  for (size_t i = 0; i < v->size(); ++i) (*v)[i] = Base(c, i) + w * Weight(i);
}

// Sum over `n` ranks of the pattern at iteration c, element i.
int32_t SumOf(uint32_t n, uint32_t c, size_t i) {
  const int32_t ranks = static_cast<int32_t>(n);
  return ranks * Base(c, i) + ranks * (ranks - 1) / 2 * Weight(i);
}

// Adds SumOf(n, c, i) to every element. The checks run over whole vectors
// every iteration (untimed), so they are written to vectorize (-O3, no exit
// inside the loop): at -O2 with an early exit they were half of a rank's CPU
// over a run of 25.6M values.
void AddSums(uint32_t n, uint32_t c, std::vector<int32_t>* v) {
  int32_t* p = v->data();
  for (size_t i = 0; i < v->size(); ++i) p[i] += SumOf(n, c, i);
}

// The first index where a and b differ, or their size.
size_t FirstDifference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(int32_t)) == 0) return a.size();
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
}

// Ends the process if an armed phase outlives `limit`.
class Watchdog {
 public:
  Watchdog(uint32_t rank, std::chrono::nanoseconds limit)
      : rank_(rank), limit_(limit), thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Arm(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = std::move(what);
    deadline_ = SteadyClock::now() + limit_;
  }
  void Disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    deadline_ = SteadyClock::time_point::max();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (SteadyClock::now() >= deadline_) {
        std::fprintf(stderr,
                     "serene-bench comm: rank %u: %s did not end within %.0f s; giving up\n", rank_,
                     what_.c_str(), std::chrono::duration<double>(limit_).count());
        std::fflush(stderr);
        _exit(124);
      }
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }

  const uint32_t rank_;
  const std::chrono::nanoseconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string what_;
  SteadyClock::time_point deadline_ = SteadyClock::time_point::max();
  std::thread thread_;
};

}  // namespace

CommRankReport RunCommRank(const CommPlan& plan, uint32_t rank, ShmBarrier* phases) {
  CommRankReport rep;
  rep.rank = rank;
  auto fail = [&](const std::string& what) {
    rep.ok = false;
    rep.error = what;
    return rep;
  };
  ClientOptions o = plan.client;
  o.rank = rank;
  o.world_size = plan.workers;
  // One Gloo group (its own TCP connections) for the barriers and one per
  // algorithm: Gloo's algorithm classes and its default allreduce on the same
  // connections deadlocked at 25.6M elements (every rank waiting in the
  // default allreduce), each on its own did not.
  auto connect = [&](const std::string& run_id) {
    collective::GlooGroupOptions go;
    go.rank = static_cast<int>(rank);
    go.world_size = static_cast<int>(plan.workers);
    go.rendezvous_dir = plan.rendezvous_dir;
    go.run_id = run_id;
    go.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.deadline);
    return collective::GlooGroup::Connect(go);
  };
  auto group = connect("comm");
  if (!group.ok()) return fail(group.status().message());
  collective::GlooGroup& g = **group;
  std::vector<std::unique_ptr<collective::GlooGroup>> per_algorithm;
  for (collective::GlooAlgorithm a : plan.algorithms) {
    auto ga = connect("comm-" + std::string(collective::GlooAlgorithmName(a)));
    if (!ga.ok()) return fail(ga.status().message());
    per_algorithm.push_back(std::move(*ga));
  }
  // Gloo does not always honour its own timeout: a watchdog ends this rank
  // (exit 124, which ends the others) if a Gloo call outlives it twice over.
  Watchdog watchdog(rank, 2 * o.deadline + std::chrono::seconds(10));

  auto connected = Client::Connect(o);
  if (!connected.ok()) return fail(connected.status().message());
  Client& c = **connected;
  auto info = c.Join();
  if (!info.ok()) return fail(info.status().message());
  if (info->done != 0xFFFFFFFFu) {
    return fail("job " + std::to_string(o.job) + " is not fresh; restart the switch");
  }
  const size_t n = info->elements;
  std::vector<int32_t> model(n), update(n), expect(n), gloo(n), gloo_sum(n);
  for (size_t i = 0; i < n; ++i) expect[i] = SeedValue(i);
  if (rank == 0) {
    Status s = c.PushFixed(expect);
    if (!s.ok()) return fail(s.message());
  }
  if (auto seeded = c.Clock(); !seeded.ok()) return fail(seeded.status().message());
  if (Status s = c.PullFixed(model); !s.ok()) return fail(s.message());
  if (model != expect) return fail("serene pull of the seeded model differs from the seed");
  ++rep.checks;

  // Every timed phase starts and ends behind an untimed barrier: a rank that
  // finishes first checks its result (a pass over the whole vector) only once
  // every rank has finished, so the checking never competes for the cores
  // with a rank still in the timed phase. A shared-memory barrier whose
  // waiters sleep (shm_barrier.h: Gloo's spins in its TCP loop thread).
  auto barrier = [&]() -> Status { return phases->Wait(o.deadline); };
  rep.gloo_s.resize(plan.algorithms.size());
  rep.gloo_cpu_s.resize(plan.algorithms.size());
  const uint32_t total = plan.warmup + plan.iters;
  for (uint32_t it = 1; it <= total; ++it) {
    const bool measured = it > plan.warmup;
    Fill(rank, it, &update);
    if (Status s = barrier(); !s.ok()) return fail(s.message());
    auto t0 = SteadyClock::now();
    double cpu0 = ProcessCpuSeconds();
    // Push, clock and pull the model after the clock: an allreduce's shape.
    auto r = c.ExchangeFixed(update, model);
    if (!r.ok()) return fail(r.status().message());
    const double serene = Since(t0);
    if (measured) {
      rep.serene_s.push_back(serene);
      rep.serene_cpu_s.push_back(ProcessCpuSeconds() - cpu0);
    }
    if (Status s = barrier(); !s.ok()) return fail(s.message());
    AddSums(plan.workers, it, &expect);
    if (const size_t i = FirstDifference(model, expect); i < n) {
      return fail("serene model after clock " + std::to_string(it) + ": element " +
                  std::to_string(i) + " is " + std::to_string(model[i]) + ", expected " +
                  std::to_string(expect[i]));
    }
    ++rep.checks;

    for (size_t a = 0; a < plan.algorithms.size(); ++a) {
      Fill(rank, it, &gloo);
      if (Status s = barrier(); !s.ok()) return fail(s.message());
      watchdog.Arm("Gloo's " + std::string(collective::GlooAlgorithmName(plan.algorithms[a])) +
                   " allreduce");
      t0 = SteadyClock::now();
      cpu0 = ProcessCpuSeconds();
      if (Status s = per_algorithm[a]->Allreduce(std::span<int32_t>(gloo), plan.algorithms[a]);
          !s.ok()) {
        return fail(s.message());
      }
      const double took = Since(t0);
      const double cpu = ProcessCpuSeconds() - cpu0;
      watchdog.Disarm();
      if (measured) {
        rep.gloo_s[a].push_back(took);
        rep.gloo_cpu_s[a].push_back(cpu);
      }
      if (Status s = barrier(); !s.ok()) return fail(s.message());
      if (a == 0) {
        std::fill(gloo_sum.begin(), gloo_sum.end(), 0);
        AddSums(plan.workers, it, &gloo_sum);
      }
      if (const size_t i = FirstDifference(gloo, gloo_sum); i < n) {
        return fail("gloo " + std::string(collective::GlooAlgorithmName(plan.algorithms[a])) +
                    " allreduce at iteration " + std::to_string(it) + ": element " +
                    std::to_string(i) + " is " + std::to_string(gloo[i]) + ", expected " +
                    std::to_string(gloo_sum[i]));
      }
      ++rep.checks;
    }
  }
  if (Status s = c.Leave(false); !s.ok()) return fail(s.message());
  // Every rank is done with every group before any closes its connections.
  watchdog.Arm("the last Gloo barrier");
  if (Status s = g.Barrier(); !s.ok()) return fail(s.message());
  watchdog.Disarm();
  rep.stats = c.stats();
  rep.ok = true;
  return rep;
}

std::string CommRankReport::ToJson() const {
  nlohmann::json j = {{"rank", rank},
                      {"ok", ok},
                      {"error", error},
                      {"serene_s", serene_s},
                      {"gloo_s", gloo_s},
                      {"serene_cpu_s", serene_cpu_s},
                      {"gloo_cpu_s", gloo_cpu_s},
                      {"checks", checks}};
  StatsToJson(stats, &j);
  return j.dump();
}

Result<CommRankReport> CommRankReport::FromJson(const std::string& line) {
  try {
    auto j = nlohmann::json::parse(line);
    CommRankReport r;
    r.rank = j.at("rank");
    r.ok = j.at("ok");
    r.error = j.at("error");
    r.serene_s = j.at("serene_s").get<std::vector<double>>();
    r.gloo_s = j.at("gloo_s").get<std::vector<std::vector<double>>>();
    r.serene_cpu_s = j.at("serene_cpu_s").get<std::vector<double>>();
    r.gloo_cpu_s = j.at("gloo_cpu_s").get<std::vector<std::vector<double>>>();
    r.checks = j.at("checks");
    StatsFromJson(j, &r.stats);
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("bad comm report: ") + e.what());
  }
}

namespace {

// The value at fraction q of the sorted samples (nearest rank).
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

// `per_rank` times and CPU of each iteration: an iteration takes its slowest
// rank's time and costs the sum of the ranks' CPU.
CommSeries Summarize(std::string name, const std::vector<const std::vector<double>*>& per_rank,
                     const std::vector<const std::vector<double>*>& cpu_per_rank) {
  std::vector<double> slowest(per_rank.front()->size(), 0.0);
  for (const auto* r : per_rank) {
    for (size_t i = 0; i < slowest.size() && i < r->size(); ++i) {
      slowest[i] = std::max(slowest[i], (*r)[i]);
    }
  }
  std::vector<double> cpu(slowest.size(), 0.0);
  for (const auto* r : cpu_per_rank) {
    for (size_t i = 0; i < cpu.size() && i < r->size(); ++i) cpu[i] += (*r)[i];
  }
  CommSeries s;
  s.name = std::move(name);
  s.median_ms = 1e3 * Quantile(slowest, 0.5);
  s.p10_ms = 1e3 * Quantile(slowest, 0.1);
  s.p90_ms = 1e3 * Quantile(slowest, 0.9);
  s.cpu_ms = 1e3 * Quantile(cpu, 0.5);
  return s;
}

}  // namespace

std::vector<CommSeries> SummarizeComm(const CommPlan& plan,
                                      const std::vector<CommRankReport>& reports) {
  std::vector<CommSeries> out;
  std::vector<const std::vector<double>*> rows, cpu;
  for (const auto& r : reports) {
    rows.push_back(&r.serene_s);
    cpu.push_back(&r.serene_cpu_s);
  }
  out.push_back(Summarize("serene", rows, cpu));
  for (size_t a = 0; a < plan.algorithms.size(); ++a) {
    rows.clear();
    cpu.clear();
    for (const auto& r : reports) {
      rows.push_back(&r.gloo_s[a]);
      cpu.push_back(&r.gloo_cpu_s[a]);
    }
    out.push_back(Summarize(
        "gloo " + std::string(collective::GlooAlgorithmName(plan.algorithms[a])), rows, cpu));
  }
  return out;
}

}  // namespace serene::loadgen
