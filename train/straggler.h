// Straggler patterns (DESIGN.md §6): how long a worker sleeps after an
// iteration's computation to emulate a slow, failed or weaker machine.
//
//   slow_worker(p, min, max): each iteration, with probability p, sleep
//       U(min, max) × the worker's mean iteration time, where the mean is the
//       running mean of the measured compute times so far (this iteration
//       included). Defaults p = 0.15, min = 0.5, max = 2.0.
//   failure(p, duration): once per run, with probability p per iteration,
//       stop for `duration` seconds; never again afterwards. Defaults
//       p = 0.01, duration = 240 s.
//   heterogeneous(factor, from, until): from iteration `from` (0-based;
//       default 0) up to but not including `until` (default: no end) sleep
//       (factor − 1) × that iteration's compute time, i.e. the machine is
//       `factor` times slower for that stretch (a straggler that comes and
//       goes when `until` is set).
//
// StragglerInjector is the pure decision logic: it is handed the measured
// compute time and returns the delay; it never reads a clock or sleeps (the
// training loop does), so it is deterministic for a seed and unit-testable.
// Seed it per worker (StragglerSeed) so ranks draw independent schedules.
//
// Thread-safety: not thread-safe; one injector per worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "train/rng.h"

namespace serene::train {

enum class StragglerKind { kNone, kSlowWorker, kFailure, kHeterogeneous };

struct StragglerSpec {
  StragglerKind kind = StragglerKind::kNone;
  double probability = 0.15;  // slow_worker, failure: per-iteration probability
  double min_factor = 0.5;    // slow_worker: lower bound of the sleep, × mean iteration time
  double max_factor = 2.0;    // slow_worker: upper bound of the sleep, × mean iteration time
  double duration_s = 240;    // failure: length of the stop, seconds
  double factor = 1.0;        // heterogeneous: slowdown factor (>= 1)
  int64_t from_iteration = 0;  // heterogeneous: the first slowed iteration (0-based)
  int64_t until_iteration = 0;  // heterogeneous: the first iteration at full speed again; 0 = none

  // The canonical text form, parseable by ParseStragglerSpec.
  std::string ToString() const;
};

// Parses "none", "slow_worker[:p[:min[:max]]]", "failure[:p[:duration_s]]"
// or "heterogeneous:factor[:from[:until]]". Omitted fields take the defaults above.
// Errors: InvalidArgument naming the bad field and the accepted forms.
Result<StragglerSpec> ParseStragglerSpec(std::string_view text);

// Parses a rank list: "" or "none" (no rank), "all" (0..world_size-1) or a
// comma-separated list like "1,3". Errors: InvalidArgument for a rank out of
// [0, world_size), a duplicate or a non-number.
Result<std::vector<int>> ParseRankList(std::string_view text, int world_size);

// The straggler seed of `rank` for the job seed `seed`.
uint64_t StragglerSeed(uint64_t seed, int rank);

class StragglerInjector {
 public:
  StragglerInjector(const StragglerSpec& spec, uint64_t seed);

  // Records one iteration whose computation took `compute_s` seconds and
  // returns how long the worker must now sleep, in seconds (>= 0).
  double NextDelay(double compute_s);

  const StragglerSpec& spec() const { return spec_; }
  int64_t iterations() const { return iterations_; }
  // Iterations the pattern slowed (slow_worker draws that hit, the failure, every
  // heterogeneous iteration with factor > 1).
  int64_t delayed_iterations() const { return delayed_iterations_; }
  double total_delay_s() const { return total_delay_s_; }
  double mean_compute_s() const { return mean_compute_s_; }
  // failure: whether the one stop has happened.
  bool failed() const { return failed_; }

 private:
  StragglerSpec spec_;
  Rng rng_;
  int64_t iterations_ = 0;
  int64_t delayed_iterations_ = 0;
  double total_delay_s_ = 0;
  double mean_compute_s_ = 0;
  bool failed_ = false;
};

}  // namespace serene::train
