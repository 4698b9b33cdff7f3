// Scenario: what an experiment runs. One training job that every run shares
// (ranks, model, step budget, target accuracy, stragglers, hyperparameters,
// the switch's row width) and a list of runs that differ only in how the
// ranks synchronize: through the Serene switch under a barrier policy (sync,
// ssp:W, async, quorum:K:L) or with the host-based Gloo allreduce baseline,
// under one of Gloo's allreduce algorithms (collective/gloo_algorithm.h).
//
// A Serene run's policy is either one of the switch's named rules, fixed for
// the whole run, or a Lua policy script (control/policy_script.h,
// docs/policies.md): a dynamic run, whose rule the runner's controller changes
// while the ranks train (runner.h).
//
// A scenario starts from the embedded default (DefaultScenario: the README's
// demo, SYNC, SSP(10), ADAPTIVE (policies/adaptive.lua) and Gloo with
// slow_worker stragglers on 4 MLP ranks) or from a TOML file, then takes overrides key by key
// (SetScenarioValue, which the binary's flags use). Every value is checked
// where it is set and ValidateScenario checks what depends on several
// fields, so a bad scenario is refused with a message naming the setting,
// the value and what is expected before any process starts. The format is
// documented in docs/experiments.md; ScenarioToToml writes it back.
//
// Pure functions over values, except that LoadScenarioFile reads the TOML
// file, ParseScenarioToml reads the file an `extends` key names, and
// ResolvePolicyScript / ValidateScenario look for and load policy scripts;
// thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collective/gloo_algorithm.h"
#include "common/status.h"
#include "train/model_layout.h"

namespace serene::experiment {

enum class BackendKind { kSerene, kGloo };

// "serene" or "gloo".
std::string_view BackendName(BackendKind backend);

// One run of the scenario's job.
struct RunSpec {
  std::string label;  // names the run in tables and directories
  BackendKind backend = BackendKind::kSerene;
  // serene: sync | ssp:W | async | quorum:K:L, or the path of a Lua policy
  // script ("policies/adaptive.lua", see IsPolicyScript); gloo: "".
  std::string policy = "sync";
  // A policy script's `params` table (name -> value as written; values that
  // read as numbers are numbers in Lua). Empty for every other run.
  std::map<std::string, std::string> params = {};
  // gloo: the allreduce algorithm (serene-train --gloo-algorithm); kDefault,
  // gloo::allreduce with default options, is what PyTorch's Gloo process
  // group runs. Serene runs: always kDefault.
  collective::GlooAlgorithm gloo_algorithm = collective::GlooAlgorithm::kDefault;
};

// True when `policy` names a Lua policy script: it ends in ".lua".
bool IsPolicyScript(std::string_view policy);

// Where a policy script's path leads: `path` itself if it is absolute or
// exists relative to the current directory; else the same relative path in
// the source tree this binary was built from (the compile-time
// SERENE_SOURCE_DIR, which holds policies/); else in the directory two levels
// above the running binary (build/bin/../.., the checkout, should the tree
// have moved since the build). Errors: NotFound naming every place tried.
Result<std::string> ResolvePolicyScript(const std::string& path);

struct Scenario {
  std::string name = "demo";  // names the experiment (output directory, report titles)

  // The training job (flags of every serene-train rank; docs/training.md).
  int workers = 4;                                  // ranks, 1..256
  train::ModelKind model = train::ModelKind::kMlp;  // mlp | cnn
  int64_t steps = 3000;                             // step budget per rank, >= 1
  double target_accuracy = 0.84;                    // stop at this test accuracy; 0 = never
  int64_t eval_every = 25;                          // steps between evaluations (rank 0)
  int64_t eval_samples = 0;                         // test examples per evaluation; 0 = all 10000
  uint64_t seed = 1;                                // model, data order and straggler draws
  double learning_rate = 0.04;                      // SGD
  double momentum = 0;                              // SGD momentum per rank, [0, 1)
  // Each step's computation lasts at least this long (serene-train
  // --compute-floor-ms; the simulator's compute model too): a heavier model
  // emulated without its CPU, so ranks sharing cores compute side by side.
  double compute_floor_ms = 0;
  int64_t batch = 256;                              // examples per rank per step
  std::string straggler = "slow_worker";            // train/straggler.h pattern, or "none"
  std::string straggler_ranks = "all";              // ranks the pattern applies to
  int threads = 1;                                  // libtorch threads per rank

  // Values per switch row (one datagram each). 4096 by default because every
  // run is on loopback, whose MTU is 64 KiB: a 16 KiB datagram is not
  // fragmented there, and a pull of the 79,510-float MLP takes 20 READs
  // instead of 311 with the 1500-byte-MTU width of 256. Use 256 across a
  // real network.
  uint32_t row = 4096;

  // Wall-clock limit per run, seconds: ranks still running are killed and
  // the run is reported as timed out.
  double timeout_s = 1200;

  // Telemetry period of a policy script's controller, milliseconds
  // (10..60000): how often an adaptive script's on_telemetry runs.
  int control_period_ms = 250;

  // Fault injection at the ports of every Serene run's switch, as
  // serene-switch's --fault takes it (net::FaultSpec, docs/switch.md), e.g.
  // "drop=0.02,dup=0.02,reorder=0.02,delay=0..20ms,seed=3,dir=both"; "" =
  // none. Gloo runs have no switch and are not affected. Under SYNC a run
  // with faults trains the same model sequence as one without: reads are
  // exact and the switch's sums are integers, whatever the network does.
  std::string switch_fault;

  // Serene runs give their job a reply group on the loopback (an IPv4
  // multicast address, docs/switch.md): an exact row one rank READs reaches
  // every rank in one send. "on" (default) or "off".
  bool group = true;

  std::vector<RunSpec> runs;  // in order; the first is the baseline of the ratios

  // The [sim] table: settings only serene-sim reads (links, compute model,
  // seeds, ...; docs/simulator.md), kept here as written (key -> text) so a
  // scenario file serves both binaries. serene-experiment ignores them;
  // serene-sim checks them (sim/sim_settings.h).
  std::map<std::string, std::string> sim;
};

// The embedded default: the demo of README.md (runs SYNC, SSP(10), ADAPTIVE
// = policies/adaptive.lua, Gloo).
Scenario DefaultScenario();

// Shrinks `s` to a CI-sized job (2 ranks, 30 steps, evaluation on 1000 test
// examples every 10 steps, no target, timeout at most 300 s); keeps the runs
// and everything else.
void ApplyQuick(Scenario* s);

// The keys SetScenarioValue and the TOML file accept, in documentation order.
const std::vector<std::string_view>& ScenarioKeys();

// Sets one field from text, as a flag or a TOML value spells it. `where`
// names the setting in errors ("--workers", "demo.toml: workers").
// Errors: InvalidArgument naming `where`, the value and what is expected.
Status SetScenarioValue(std::string_view key, std::string_view value, const std::string& where,
                        Scenario* s);

// Parses a run list: comma-separated items, each "gloo", "gloo:ALGORITHM"
// (a Gloo allreduce algorithm: default, halving-doubling, bcube, ring,
// ring-chunked), "serene" (= SYNC), "serene:POLICY" or a bare POLICY (sync,
// ssp:W, async, quorum:K:L, or a policy script's path ending in .lua, without
// params). Labels are derived from the policy or algorithm (DefaultLabel); a
// repeated label gets " #2", " #3", ...
// Errors: InvalidArgument naming the item. Scripts are loaded only by
// ValidateScenario.
Result<std::vector<RunSpec>> ParseRunList(std::string_view text);

// "SYNC", "SSP(10)", "ASYNC", "QUORUM(3,1)"; "Gloo" (the default algorithm)
// or "Gloo(halving-doubling)" (any other); a policy script's file stem
// upper-cased ("policies/adaptive.lua" -> "ADAPTIVE"); other policy forms
// are used as written.
std::string DefaultLabel(
    BackendKind backend, std::string_view policy,
    collective::GlooAlgorithm gloo_algorithm = collective::GlooAlgorithm::kDefault);

// A scenario from a TOML document on top of DefaultScenario(). Top-level
// keys are ScenarioKeys(); [[run]] tables (label, backend, policy, for a
// policy script an optional params table of numbers and strings, for a gloo
// run an optional algorithm) replace the default runs; the [sim] table is
// the file's own (none: empty, not the default's). Unknown keys and wrong
// types are errors; `source` names the document in messages.
//
// `extends = "FILE"` starts from the scenario in FILE (a path relative to the
// directory of `source`, read with LoadScenarioFile) instead of the default:
// this document's keys override FILE's, its [[run]] tables replace FILE's
// runs, and its [sim] keys override FILE's one by one. A cycle or a chain of
// more than 8 files is refused; an unreadable FILE is NotFound.
Result<Scenario> ParseScenarioToml(std::string_view text, std::string_view source);

// Reads and parses a TOML file. Errors: NotFound if unreadable, else as above.
Result<Scenario> LoadScenarioFile(const std::string& path);

// Checks what involves several fields: at least one run; labels non-empty
// and unique; each serene policy parses and its quorum fits the workers;
// each policy script resolves (ResolvePolicyScript) and loads with its
// params (PolicyScript::LoadFile, so a script error is refused here with its
// file:line message, before any process starts); only scripts take params;
// gloo runs take no policy, serene runs no Gloo algorithm; straggler ranks
// exist; a rank's shard (60000 / workers examples) holds at least one batch.
Status ValidateScenario(const Scenario& s);

// The value of setting `key` (one of ScenarioKeys()) as SetScenarioValue
// accepts it; "" for an unknown key.
std::string ScenarioValueText(const Scenario& s, std::string_view key);

// The scenario as a TOML document that ParseScenarioToml reads back.
std::string ScenarioToToml(const Scenario& s);

// A directory-friendly form of a label: "SSP(10)" -> "ssp-10".
std::string Slug(std::string_view label);

}  // namespace serene::experiment
