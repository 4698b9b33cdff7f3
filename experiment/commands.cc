#include "experiment/commands.h"

#include <fmt/format.h>

#include "loadgen/switch_launch.h"
#include "train/model_layout.h"

namespace serene::experiment {

std::string SwitchJobSpec(const Scenario& s, const RunSpec& run, uint16_t job,
                          const std::string& key_file, uint16_t group_port) {
  // A policy script's run starts under SYNC; its controller sets the rest.
  const std::string policy = IsPolicyScript(run.policy) ? "sync" : run.policy;
  const std::string group =
      group_port == 0 ? std::string() : ",group=" + loadgen::LoopbackGroup(job, group_port);
  return fmt::format("id={},workers={},elements={},row={},key_file={}{},policy={}", job,
                     s.workers, train::ParameterCount(s.model), s.row, key_file, group, policy);
}

std::vector<std::string> SwitchArgs(const Scenario& s, const RunSpec& run, uint16_t job,
                                    const std::string& key_file, uint16_t group_port) {
  std::vector<std::string> a = {"--bind",    "127.0.0.1",   "--port",      "0",
                                "--control", "127.0.0.1:0", "--log-level", "info"};
  a.insert(a.end(), {"--job", SwitchJobSpec(s, run, job, key_file, group_port)});
  if (!s.switch_fault.empty()) a.insert(a.end(), {"--fault", s.switch_fault});
  return a;
}

namespace {

// The one rank that evaluates (--eval-ranks below), and so the one with
// pauses to report.
constexpr int kEvaluatingRank = 0;

}  // namespace

std::vector<std::string> TrainArgs(const Scenario& s, const RunSpec& run, int rank,
                                   const RunContext& ctx) {
  std::vector<std::string> a = {"--backend",    std::string(BackendName(run.backend)),
                                "--rank",       std::to_string(rank),
                                "--world-size", std::to_string(s.workers)};
  if (run.backend == BackendKind::kSerene) {
    a.insert(a.end(), {"--switch", ctx.switch_address, "--job", std::to_string(ctx.job),
                       "--key-file", ctx.key_file});
    // Only a rank that evaluates has pauses to report; the others get no
    // runtime API channel (nor its gRPC threads).
    if (!ctx.control_address.empty() && rank == kEvaluatingRank) {
      a.insert(a.end(), {"--control", ctx.control_address});
    }
  } else {
    a.insert(a.end(), {"--rendezvous", RendezvousDir(ctx.dir), "--gloo-algorithm",
                       std::string(collective::GlooAlgorithmName(run.gloo_algorithm))});
  }
  a.insert(a.end(), {"--model",
                     std::string(train::ModelKindName(s.model)),
                     "--lr",
                     fmt::format("{}", s.learning_rate),
                     "--momentum",
                     fmt::format("{}", s.momentum),
                     "--compute-floor-ms",
                     fmt::format("{}", s.compute_floor_ms),
                     "--batch",
                     std::to_string(s.batch),
                     "--steps",
                     std::to_string(s.steps),
                     "--target-accuracy",
                     fmt::format("{}", s.target_accuracy),
                     "--eval-every",
                     std::to_string(s.eval_every),
                     "--eval-samples",
                     std::to_string(s.eval_samples),
                     "--eval-ranks",
                     std::to_string(kEvaluatingRank),
                     "--straggler",
                     s.straggler,
                     "--straggler-ranks",
                     s.straggler_ranks,
                     "--seed",
                     std::to_string(s.seed),
                     "--threads",
                     std::to_string(s.threads),
                     "--metrics",
                     MetricsPath(ctx.dir, rank)});
  return a;
}

std::string MetricsPath(const std::string& dir, int rank) {
  return fmt::format("{}/rank{}.json", dir, rank);
}

std::string LogPath(const std::string& dir, int rank) {
  return fmt::format("{}/rank{}.log", dir, rank);
}

std::string RendezvousDir(const std::string& dir) { return dir + "/rendezvous"; }


}  // namespace serene::experiment
