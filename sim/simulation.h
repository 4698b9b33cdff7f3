// Simulation: N simulated ranks and one switch in virtual time
// (docs/simulator.md).
//
// The switch is the real data plane, dataplane::Pipeline: every JOIN, READ,
// INC, CLOCK and LEAVE a rank sends is a wire-format datagram that crosses
// the rank's uplink (link.h), goes through Pipeline::Process at its arrival
// time, and every packet the pipeline emits crosses the destination rank's
// downlink back. A policy script (control/policy_script.h) is run by
// SimController through the controller's own pieces (TelemetryToProto,
// PlanChange, RuleFromProto) against the same pipeline, every control period
// of virtual time. Nothing reads a real clock: the same options and work give
// the same result, bit for bit.
//
// Not thread-safe; one simulation per thread (the work may share state, see
// torch_work.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "dataplane/counters.h"
#include "sim/link.h"
#include "sim/rank_work.h"
#include "sim/sim_rank.h"
#include "train/metrics.h"
#include "train/straggler.h"

namespace serene::sim {

struct SimulationOptions {
  int workers = 4;
  uint32_t row_width = 4096;
  uint32_t scale_log2 = 24;
  // sync | ssp:W | async | quorum:K:L, or the path of a Lua policy script
  // (ending in .lua) with `params`.
  std::string policy = "sync";
  std::map<std::string, std::string> params;
  double control_period_s = 0.25;  // a script's on_telemetry period, virtual seconds

  LinkSpec link;  // every rank's uplink and downlink
  // The switch's time per packet, one packet after another in arrival order;
  // 0: it processes a packet when it arrives (a hardware pipeline at line
  // rate). A software switch sharing a host's cores is not.
  double switch_service_s = 0;
  ComputeModel compute;
  std::optional<train::StragglerSpec> straggler;  // applied to straggler_ranks
  std::vector<int> straggler_ranks;
  StragglerBase straggler_base = StragglerBase::kCompute;

  // The switch daemon's silence eviction (switch/silence_evictor.h): a
  // joined rank silent this long is evicted, checked every evict_check_s;
  // 0 = never. A rank computing or sleeping sends nothing, so this must stay
  // well above a step (the daemon's default is 10 s).
  double evict_after_s = 10;
  double evict_check_s = 0.5;

  int64_t max_steps = 3000;
  double target_accuracy = 0;  // 0 = never
  int64_t eval_every = 25;
  uint64_t seed = 1;
  // The run fails if it has not ended after this much virtual time.
  double max_virtual_s = 7 * 24 * 3600.0;
};

// A rule the script's controller installed (experiment/report.h's
// PolicyChange, in virtual time).
struct AppliedRule {
  double seconds = 0;  // rank 0's run clock
  int64_t high = -1;   // the job's fastest completed clock then (-1: none)
  uint32_t effective_clock = 0;
  std::string rule;  // BarrierParams::ToString
  uint32_t epoch = 0;
};

struct SimulationResult {
  std::vector<train::RunMetrics> ranks;  // by rank
  std::vector<RankCounters> counters;    // by rank
  std::vector<AppliedRule> changes;
  std::vector<std::string> controller_log;  // script log lines and errors
  dataplane::JobCounters switch_counters;
  double virtual_s = 0;  // when the last rank finished
  uint64_t events = 0;
  uint64_t packets = 0;  // datagrams on every link, both directions
  uint64_t lost = 0;
  uint64_t evictions = 0;  // ranks the silence eviction took out of the barrier
};

// Runs one job to its end. Errors: InvalidArgument for options the pipeline
// or the policy refuses; the first rank failure (an ERROR from the switch, a
// failed step); DeadlineExceeded naming each rank's state if the job has not
// ended after max_virtual_s.
Result<SimulationResult> RunSimulation(const SimulationOptions& options, RankWork& work);

}  // namespace serene::sim
