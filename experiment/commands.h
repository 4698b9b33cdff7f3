// Command lines of one run's processes: the serene-switch that holds the job
// (Serene runs) and the N serene-train ranks, all on this host over loopback.
//
// Every rank gets the scenario's training flags (model, budget, target,
// stragglers, seed, hyperparameters), writes its metrics JSON into the run
// directory and evaluates on rank 0 only (under SYNC every rank holds the
// same model; the ranks share a few cores). Serene ranks talk to the switch
// named by the context; Gloo ranks meet in a fresh file-store rendezvous
// directory inside the run directory and run the run's allreduce algorithm.
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiment/scenario.h"

namespace serene::experiment {

// Where a run's processes meet and write.
struct RunContext {
  std::string dir;             // the run directory (exists)
  std::string switch_address;  // serene: "127.0.0.1:PORT" of the started switch
  uint16_t job = 1;            // serene: job id on the switch
  std::string key_file;        // serene: the private file holding the job's key
  // serene: the switch's runtime API, when a policy script's controller
  // drives the run: the ranks report their evaluations' pauses there.
  std::string control_address;
};

// The job spec of serene-switch's --job flag:
// "id=J,workers=N,elements=<ParameterCount(model)>,row=R,key_file=F,policy=P",
// with P = sync for a policy script's run (its controller sets the rule).
// The key itself is never on a command line (docs/security.md, "Secrets"):
// the switch and the ranks read it from `key_file`.
// REQUIRES: run.backend == kSerene.
// With `group_port` (not 0) the job has the reply group 239.83.0.J:group_port.
std::string SwitchJobSpec(const Scenario& s, const RunSpec& run, uint16_t job,
                          const std::string& key_file, uint16_t group_port = 0);

// serene-switch's arguments: loopback, an ephemeral port (it logs "listening
// on ADDR"), the runtime API on an ephemeral loopback port (it logs "runtime
// API at ADDR"; a policy script's controller uses it), log level info, the
// job (with its reply group on `group_port`, unless 0), and --fault with the
// scenario's switch_fault when it has one.
std::vector<std::string> SwitchArgs(const Scenario& s, const RunSpec& run, uint16_t job,
                                    const std::string& key_file, uint16_t group_port = 0);

// serene-train's arguments for `rank` (a Serene rank gets --key-file, and
// --control when the context names the runtime API).
std::vector<std::string> TrainArgs(const Scenario& s, const RunSpec& run, int rank,
                                   const RunContext& ctx);

// Files in a run directory.
std::string MetricsPath(const std::string& dir, int rank);  // dir/rank<r>.json
std::string LogPath(const std::string& dir, int rank);      // dir/rank<r>.log
std::string RendezvousDir(const std::string& dir);          // dir/rendezvous

}  // namespace serene::experiment
