#include "e2e_job.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace serene::testing {

float Update(uint32_t w, uint32_t c, size_t i) {
  if (c == 0) return static_cast<float>(std::sin(0.001 * static_cast<double>(i)));
  return static_cast<float>(0.01 * std::sin(7.0 * w + 13.0 * c + 0.01 * static_cast<double>(i)));
}

std::vector<float> UpdateVector(uint32_t w, uint32_t c, size_t n) {
  std::vector<float> u(n);
  for (size_t i = 0; i < n; ++i) u[i] = Update(w, c, i);
  return u;
}

std::vector<std::vector<int32_t>> ExpectedModels(uint32_t world, size_t elements, uint32_t clocks,
                                                 uint32_t scale_log2) {
  std::vector<std::vector<int32_t>> models;
  std::vector<int32_t> acc(elements), q(elements);
  EXPECT_TRUE(Quantize(UpdateVector(0, 0, elements), scale_log2, acc).ok());
  models.push_back(acc);
  for (uint32_t c = 1; c <= clocks; ++c) {
    for (uint32_t w = 0; w < world; ++w) {
      EXPECT_TRUE(Quantize(UpdateVector(w, c, elements), scale_log2, q).ok());
      for (size_t i = 0; i < elements; ++i) acc[i] += q[i];
    }
    models.push_back(acc);
  }
  return models;
}

namespace {

// One rank's steps with Exchange: a pull, then push + clock + pull per clock.
void ExchangeSteps(Client& c, uint32_t rank, size_t elements, uint32_t clocks,
                   const std::function<void(uint32_t, uint32_t)>& before_step, Steps steps,
                   RankLog* log) {
  std::vector<int32_t> fixed(elements), update(elements);
  std::vector<float> model(elements);
  // The model this rank holds now, in the log.
  auto record = [&] {
    if (steps == Steps::kExchange) {
      log->float_pulls.push_back(model);
    } else {
      log->pulls.push_back(fixed);
    }
  };
  log->status = steps == Steps::kExchange ? c.Pull(model) : c.PullFixed(fixed);
  for (uint32_t clock = 1; clock <= clocks && log->status.ok(); ++clock) {
    record();
    if (before_step) before_step(rank, clock);
    if (steps == Steps::kExchangeFixed) {
      log->status = Quantize(UpdateVector(rank, clock, elements), c.info().scale_log2, update);
      if (!log->status.ok()) break;
    }
    Result<ClockResult> released = steps == Steps::kExchange
                                       ? c.Exchange(UpdateVector(rank, clock, elements), model)
                                       : c.ExchangeFixed(update, fixed);
    if (!released.ok()) {
      log->status = released.status();
      break;
    }
    log->releases.push_back(*released);
  }
  if (log->status.ok()) record();
}

}  // namespace

std::vector<RankLog> RunJob(const std::vector<ClientOptions>& ranks, size_t elements,
                            uint32_t clocks,
                            const std::function<void(uint32_t, uint32_t)>& before_step,
                            Steps steps) {
  std::vector<RankLog> logs(ranks.size());
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < ranks.size(); ++rank) {
    threads.emplace_back([&, rank] {
      RankLog& log = logs[rank];
      auto connected = Client::Connect(ranks[rank]);
      if (!connected.ok()) {
        log.status = connected.status();
        return;
      }
      Client& c = **connected;
      auto info = c.Join();
      if (!info.ok()) {
        log.status = info.status();
        return;
      }
      log.info = *info;
      std::vector<float> model = UpdateVector(0, 0, elements);
      log.status = c.Initialize(model);
      if (log.status.ok() && steps != Steps::kPullPushClock) {
        ExchangeSteps(c, rank, elements, clocks, before_step, steps, &log);
        log.stats = c.stats();
        return;
      }
      std::vector<int32_t> fixed(elements);
      for (uint32_t clock = 1; clock <= clocks && log.status.ok(); ++clock) {
        if (before_step) before_step(rank, clock);
        log.status = c.PullFixed(fixed);
        if (!log.status.ok()) break;
        log.pulls.push_back(fixed);
        log.status = c.Push(UpdateVector(rank, clock, elements));
        if (!log.status.ok()) break;
        auto released = c.Clock();
        if (!released.ok()) {
          log.status = released.status();
          break;
        }
        log.releases.push_back(*released);
      }
      if (log.status.ok()) log.status = c.PullFixed(fixed);
      if (log.status.ok()) log.pulls.push_back(fixed);
      log.stats = c.stats();
    });
  }
  for (auto& t : threads) t.join();
  return logs;
}

}  // namespace serene::testing
