// What the end-to-end client tests share: the updates every rank pushes, the
// exact models they must pull, and a job of ranks (one thread and one client
// each) run against a real switch.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "serene/client.h"

namespace serene::testing {

// The update rank w pushes at clock c (clock 0: rank 0's initial model).
float Update(uint32_t w, uint32_t c, size_t i);
std::vector<float> UpdateVector(uint32_t w, uint32_t c, size_t n);

// The exact fixed-point model at each clock 1..C+1 of `world` ranks,
// computed independently of the switch.
std::vector<std::vector<int32_t>> ExpectedModels(uint32_t world, size_t elements, uint32_t clocks,
                                                 uint32_t scale_log2 = 24);

// How each rank takes a step.
enum class Steps {
  kPullPushClock,  // PullFixed, Push, Clock; a last PullFixed
  kExchangeFixed,  // PullFixed once, then ExchangeFixed per clock (pushes, clocks, pulls)
  kExchange,       // Pull once, then Exchange (floats) per clock
};

// What one rank saw.
struct RankLog {
  Status status;
  JobInfo info;
  std::vector<std::vector<int32_t>> pulls;  // fixed-point model at clocks 1..C+1
  std::vector<std::vector<float>> float_pulls;  // the same, with Steps::kExchange
  std::vector<ClockResult> releases;        // clocks 1..C
  ClientStats stats;
};

// Runs one rank per element of `ranks` (its options) for `clocks` clocks:
// join, initialize, then pull, push, clock; and a last pull (or as `steps`
// says). `before_step (rank, clock)` runs before each step (to slow or block
// a rank).
std::vector<RankLog> RunJob(const std::vector<ClientOptions>& ranks, size_t elements,
                            uint32_t clocks,
                            const std::function<void(uint32_t, uint32_t)>& before_step = nullptr,
                            Steps steps = Steps::kPullPushClock);

}  // namespace serene::testing
