// SimSettings: what only the simulator has — links, the compute model,
// seeds, timing-only mode — from a scenario's [sim] table
// (experiment::Scenario::sim) and serene-sim's flags, which override it
// key by key (docs/simulator.md "Settings").
//
// Pure functions over values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sim/link.h"
#include "sim/sim_rank.h"

namespace serene::sim {

struct SimSettings {
  LinkSpec link;                    // link: every rank's links
  double switch_service_s = 0;      // switch_us: the switch's time per packet; 0 = at arrival
  std::optional<double> compute_s;  // compute_ms: time per step; nullopt = "auto" (measure)
  double jitter = 0.05;             // jitter: compute × (1 ± jitter), uniform
  double eval_s = 0;                // eval_ms: virtual time of one evaluation on rank 0
  StragglerBase straggler_base = StragglerBase::kCompute;  // straggler_base
  bool timing_only = false;                // timing_only: no gradients, no evaluation
  std::vector<uint64_t> seeds;             // seeds: one simulation per seed; empty = the scenario's
  double max_virtual_s = 7 * 24 * 3600.0;  // max_virtual_s: a run's virtual deadline
  double evict_after_s = 10;  // evict_after_s: the switch evicts a rank silent this long; 0 = never
};

// The keys, in documentation order.
const std::vector<std::string_view>& SimSettingKeys();

// Sets one key from text ("link" "latency=5us,gbps=10", "switch_us" "12", "compute_ms" "6" or
// "auto", "jitter" "0.05", "eval_ms" "40", "straggler_base" "compute"|"iteration"|"wall_iteration",
// "timing_only" "true"|"false", "seeds" "1,2,3", "max_virtual_s" "3600", "evict_after_s" "10").
// `where` names the setting in errors. Errors: InvalidArgument naming
// `where`, the value and what is expected; an unknown key lists the keys.
Status SetSimSetting(std::string_view key, std::string_view value, const std::string& where,
                     SimSettings* s);

// A [sim] table on top of the defaults; `source` names the file in errors.
Result<SimSettings> SimSettingsFromTable(const std::map<std::string, std::string>& table,
                                         const std::string& source);

// "compute", "iteration" or "wall_iteration".
std::string_view StragglerBaseName(StragglerBase base);

}  // namespace serene::sim
