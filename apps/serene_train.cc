// serene-train: one data-parallel training worker (rank) on Fashion-MNIST.
// Wiring only: flags -> TrainerOptions, data, backend, Trainer, metrics files.
// See docs/training.md.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "apps/cli_parse.h"
#include "apps/key_flags.h"
#include "collective/gloo_algorithm.h"
#include "common/parse.h"
#include "common/secret_file.h"
#include "control/pause_reporter.h"
#include "train/fashion_mnist.h"
#include "train/gloo_backend.h"
#include "train/metrics.h"
#include "train/model_layout.h"
#include "train/network.h"
#include "train/retained_memory.h"
#include "train/serene_backend.h"
#include "train/straggler.h"
#include "train/trainer.h"

namespace st = serene::train;

namespace {

// Exit code 2 for bad flags or flag values, 1 for everything else.
int Fail(const serene::Status& s) {
  spdlog::error("{}", s.ToString());
  return s.code() == serene::Status::Code::kInvalidArgument ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"serene-train: a data-parallel training worker (MLP/CNN on Fashion-MNIST)"};
  std::string backend = "gloo", model = "mlp", straggler = "none", straggler_ranks = "all";
  std::string eval_ranks = "0", data_dir = st::DefaultDataDir(), log_level = "info";
  st::MetricsPaths paths;
  std::string model_path;  // --save-model
  st::GlooOptions gloo;
  double gloo_timeout_s = 600;
  std::string gloo_algorithm = "default";
  st::TrainerOptions o;
  o.max_steps = 2000;
  int threads = 1;
  app.add_option("--backend", backend, "Synchronization backend")
      ->check(CLI::IsMember({"gloo", "serene"}))
      ->capture_default_str();
  app.add_option("--rank", gloo.rank, "This worker's rank")->envname("RANK")->required();
  app.add_option("--world-size", gloo.world_size, "Number of ranks")
      ->envname("WORLD_SIZE")
      ->required()
      ->check(CLI::Range(1, 65535));
  std::string switch_addr = "127.0.0.1:7000";
  serene::apps::KeyFlags key_flags;
  uint32_t job = 1;
  app.add_option("--switch", switch_addr, "serene: switch address host:port")
      ->envname("SERENE_SWITCH")
      ->capture_default_str();
  app.add_option("--job", job, "serene: job id on the switch")
      ->envname("SERENE_JOB")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  serene::apps::AddKeyFlags(&app, &key_flags, "serene: ", "0");
  std::string control_addr, control_token_file;
  app.add_option("--control", control_addr,
                 "serene: the switch's runtime API (host:port), to report how long each "
                 "evaluation paused this rank (ReportPause), so that a policy does not take it "
                 "for a straggler; empty = do not report")
      ->envname("SERENE_CONTROL");
  app.add_option("--control-token-file", control_token_file,
                 "serene: file holding the runtime API's token, if the switch has one");
  app.add_option("--rendezvous", gloo.rendezvous_dir,
                 "gloo: rendezvous directory shared by all ranks (file store; fresh per run)");
  app.add_option("--run-id", gloo.run_id, "gloo: key prefix in the store")->capture_default_str();
  app.add_option("--gloo-host", gloo.hostname, "gloo: address to bind")->capture_default_str();
  app.add_option("--gloo-iface", gloo.iface, "gloo: interface to bind (overrides --gloo-host)");
  app.add_option("--gloo-timeout", gloo_timeout_s, "gloo: rendezvous/collective timeout, s")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--gloo-algorithm", gloo_algorithm,
                 "gloo: allreduce algorithm: default (gloo::allreduce, as PyTorch's Gloo process "
                 "group), halving-doubling or ring-chunked; the same on every rank")
      ->capture_default_str();
  app.add_option("--model", model, "mlp (784-100-10) or cnn (LeNet-5)")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  app.add_option("--lr", o.learning_rate, "SGD learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--momentum", o.momentum,
                 "SGD momentum in [0, 1), kept by each rank for its own gradients (0 = none)")
      ->check(CLI::Range(0.0, 0.999999))
      ->capture_default_str();
  double compute_floor_ms = 0;
  app.add_option("--compute-floor-ms", compute_floor_ms,
                 "Each step's computation lasts at least this long, the rest slept: emulates a "
                 "heavier model, so ranks sharing cores compute side by side (0 = none)")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  app.add_option("--batch", o.batch_size, "Examples per rank per step")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_option("--steps", o.max_steps, "Step limit (0 = none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--time-limit", o.time_limit_s, "Time limit in seconds (0 = none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--target-accuracy", o.target_accuracy,
                 "Stop all ranks at this test accuracy (0 = never)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--eval-every", o.eval_every, "Steps between evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--eval-samples", o.eval_samples, "Test examples to evaluate (0 = all 10000)")
      ->capture_default_str();
  app.add_option("--eval-ranks", eval_ranks, "Ranks that evaluate: list, 'all' or 'none'")
      ->capture_default_str();
  app.add_option("--straggler", straggler,
                 "none | slow_worker[:p[:min[:max]]] | failure[:p[:seconds]] | "
                 "heterogeneous:factor[:from[:until]]")
      ->capture_default_str();
  app.add_option("--straggler-ranks", straggler_ranks, "Ranks the pattern applies to")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of model, data order and stragglers")
      ->capture_default_str();
  app.add_option("--threads", threads, "libtorch threads per rank")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--data-dir", data_dir, "Fashion-MNIST IDX directory")
      ->envname("SERENE_DATA_DIR")
      ->capture_default_str();
  app.add_option("--metrics", paths.json, "Write JSON metrics here ({rank} is replaced)");
  app.add_option("--timeline-csv", paths.timeline_csv, "Write the accuracy timeline as CSV");
  app.add_option("--iterations-csv", paths.iterations_csv, "Write per-iteration timings as CSV");
  app.add_option("--save-model", model_path,
                 "Write the final model here as raw float32 ({rank} is replaced)");
  app.add_option("--log-every", o.log_every, "Steps between progress lines (0 = eval-every)")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

  spdlog::set_level(spdlog::level::from_str(log_level));
  if (gloo.rank < 0 || gloo.rank >= gloo.world_size) {
    return Fail(serene::Status::InvalidArgument("--rank " + std::to_string(gloo.rank) +
                                                " is not in [0, --world-size " +
                                                std::to_string(gloo.world_size) + ")"));
  }
  serene::ClientOptions client;
  if (backend == "serene") {
    auto env = serene::ClientOptions::FromEnvironment();
    if (!env.ok()) return Fail(env.status());
    client = *env;
    client.switch_address = switch_addr;
    client.job = static_cast<uint16_t>(job);
    client.rank = static_cast<uint32_t>(gloo.rank);
    client.world_size = static_cast<uint32_t>(gloo.world_size);
    auto key = serene::apps::ResolveKeyFlags(key_flags, 0);
    if (!key.ok()) return Fail(key.status());
    if (key->from_argv) spdlog::warn("{}", serene::ArgvKeyWarning());
    client.key = key->key;
  } else if (gloo.rendezvous_dir.empty()) {
    return Fail(serene::Status::InvalidArgument("--backend gloo needs --rendezvous DIR"));
  }
  if (backend != "serene" && (!control_addr.empty() || !control_token_file.empty())) {
    return Fail(serene::Status::InvalidArgument(
        "--control and --control-token-file are for --backend serene (the switch's runtime API)"));
  }
  std::unique_ptr<serene::control::PauseReporter> pauses;
  if (!control_addr.empty()) {
    std::string token;
    if (!control_token_file.empty()) {
      auto t = serene::ReadTokenFile(control_token_file);
      if (!t.ok()) return Fail(t.status());
      token = *t;
    }
    auto r = serene::control::PauseReporter::Create(control_addr, token, job,
                                                    static_cast<uint32_t>(gloo.rank));
    if (!r.ok()) return Fail(serene::Status::InvalidArgument("--control: " + r.status().message()));
    pauses = std::move(*r);
    o.report_pause = [&pauses](double seconds) { pauses->Report(seconds); };
  } else if (!control_token_file.empty()) {
    return Fail(serene::Status::InvalidArgument("--control-token-file needs --control HOST:PORT"));
  }
  auto algorithm = serene::collective::ParseGlooAlgorithm(gloo_algorithm);
  const serene::Status taken =
      algorithm.ok() ? st::CheckGlooAlgorithm(*algorithm) : algorithm.status();
  if (!taken.ok()) {
    return Fail(serene::Status::InvalidArgument("--gloo-algorithm: " + taken.message()));
  }
  gloo.algorithm = *algorithm;
  gloo.timeout = std::chrono::milliseconds(static_cast<int64_t>(gloo_timeout_s * 1000));
  o.model = *st::ParseModelKind(model);
  o.compute_floor_s = compute_floor_ms * 1e-3;
  o.log_iterations = !paths.iterations_csv.empty();
  auto spec = st::ParseStragglerSpec(straggler);
  if (!spec.ok()) return Fail(spec.status());
  o.straggler = *spec;
  auto sranks = st::ParseRankList(straggler_ranks, gloo.world_size);
  if (!sranks.ok()) return Fail(sranks.status());
  o.straggler_ranks = *sranks;
  auto eranks = st::ParseRankList(eval_ranks, gloo.world_size);
  if (!eranks.ok()) return Fail(eranks.status());
  o.eval_ranks = *eranks;
  if (auto s = st::SetComputeThreads(threads); !s.ok()) return Fail(s);
  if (auto s = st::RetainFreedMemory(); !s.ok()) {
    // Only speed depends on it (e.g. a sanitizer's allocator refuses it).
    spdlog::warn("freed memory goes back to the kernel after each step: {}", s.message());
  }

  auto train = st::LoadFashionMnist(data_dir, st::Split::kTrain);
  if (!train.ok()) return Fail(train.status());
  std::optional<st::Dataset> test;
  if (std::find(o.eval_ranks.begin(), o.eval_ranks.end(), gloo.rank) != o.eval_ranks.end()) {
    auto loaded = st::LoadFashionMnist(data_dir, st::Split::kTest);
    if (!loaded.ok()) return Fail(loaded.status());
    test = std::move(*loaded);
  }
  std::unique_ptr<st::Backend> sync;
  const st::SereneBackend* serene = nullptr;  // for its client's counters
  if (backend == "serene") {
    auto connected = st::SereneBackend::Connect(client, st::ParameterCount(o.model));
    if (!connected.ok()) return Fail(connected.status());
    serene = connected->get();
    sync = std::move(*connected);
  } else {
    auto connected = st::GlooBackend::Connect(gloo);
    if (!connected.ok()) return Fail(connected.status());
    spdlog::info("[gloo rank {}/{}] allreduce algorithm: {}", gloo.rank, gloo.world_size,
                 serene::collective::GlooAlgorithmName(gloo.algorithm));
    sync = std::move(*connected);
  }
  auto trainer = st::Trainer::Create(o, *train, test ? &*test : nullptr, *sync);
  if (!trainer.ok()) return Fail(trainer.status());
  auto result = (*trainer)->Run();
  if (!result.ok()) return Fail(result.status());
  if (serene != nullptr) {
    const serene::ClientStats& c = serene->stats();
    result->retransmissions = c.read_retransmits + c.clock_retransmits + c.rows_resent;
  }

  if (auto s = st::WriteMetrics(*result, paths); !s.ok()) return Fail(s);
  if (!model_path.empty()) {
    const std::string path = st::ExpandRankPattern(model_path, gloo.rank);
    if (auto s = st::WriteModelFile((*trainer)->model(), path); !s.ok()) return Fail(s);
  }
  return 0;
}
