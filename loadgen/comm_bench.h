// CommBench: Serene's aggregation and Gloo's allreduce side by side, over
// the same N processes in one run (`serene-bench comm`).
//
// Every rank does, per iteration: [untimed] make its update, barrier;
// [timed] Serene push + clock + pull (Client::ExchangeFixed: the model
// after the clock, an allreduce's shape); [untimed] check that model
// against the exact sum; then for each Gloo algorithm: [untimed] fill the
// buffer, barrier; [timed] allreduce; [untimed] check the sum. The barriers
// (Gloo's, untimed) line the ranks up, so a timed phase never includes
// another rank's checking; interleaving makes drift on this shared machine
// hit every series alike. An iteration's time is the slowest rank's, the
// report gives medians (and spread) over iterations after a warm-up.
//
// Each timed phase also records the CPU time its process spent in it
// (CLOCK_PROCESS_CPUTIME_ID: the client, or Gloo's calling and I/O threads).
// Summed over ranks it says what a series costs the host's cores, beside
// what it costs in wall time: on a host whose cores the ranks (and, for
// Serene, the switch) share, wall time cannot fall much below CPU / cores.
//
// The values are small integers, so both sides are exact: Serene carries
// them as fixed-point int32 (the switch sums them), Gloo sums int32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collective/gloo_algorithm.h"
#include "common/status.h"
#include "loadgen/shm_barrier.h"
#include "serene/client.h"

namespace serene::loadgen {

struct CommPlan {
  ClientOptions client;  // switch, job, key, window (rank set per rank)
  uint32_t workers = 4;
  uint32_t warmup = 3;  // iterations not measured
  uint32_t iters = 20;  // measured iterations
  std::vector<collective::GlooAlgorithm> algorithms;
  std::string rendezvous_dir;  // Gloo FileStore directory (fresh per run)
};

struct CommRankReport {
  uint32_t rank = 0;
  bool ok = false;
  std::string error;
  std::vector<double> serene_s;                 // per measured iteration
  std::vector<std::vector<double>> gloo_s;      // [algorithm][iteration]
  std::vector<double> serene_cpu_s;             // process CPU in each timed phase
  std::vector<std::vector<double>> gloo_cpu_s;  // [algorithm][iteration]
  uint32_t checks = 0;                          // results compared with the exact sum
  ClientStats stats;

  std::string ToJson() const;
  static Result<CommRankReport> FromJson(const std::string& line);
};

// One rank of the benchmark, in a process forked after `phases` (the
// barrier around every timed phase, plan.workers parties) was created.
// Never throws.
CommRankReport RunCommRank(const CommPlan& plan, uint32_t rank, ShmBarrier* phases);

// A series' per-iteration times (the slowest rank's), summarised.
struct CommSeries {
  std::string name;
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  double cpu_ms = 0;  // median over iterations of the CPU all ranks spent in it
};

// Combines the ranks' reports: series 0 is Serene, then one per algorithm.
// REQUIRES: every report ok and of the plan's shape.
std::vector<CommSeries> SummarizeComm(const CommPlan& plan,
                                      const std::vector<CommRankReport>& reports);

}  // namespace serene::loadgen
