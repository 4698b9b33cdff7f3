// Trainer: the data-parallel training loop of one rank (DESIGN.md §6).
//
// Per iteration:
//   Pull(model) -> [evaluate every eval_every steps] -> next local batch ->
//   forward/backward -> update = −lr/N · g -> [straggler sleep] -> Push(update)
// against any Backend (backend.h). N is the world size, so the sum of the
// ranks' updates is one SGD step with the mean gradient.
//
// Stopping: the first evaluating rank to measure test accuracy >=
// target_accuracy calls Backend::Finish(), which ends the job for every rank;
// a rank also stops (and ends the job) when its time limit passes, and every
// rank stops by itself after max_steps iterations. At least one of max_steps
// and time_limit_s must be set. See backend.h for the exact protocol.
//
// Evaluation happens right after Pull, so on a synchronous backend the point
// at step s measures the model after exactly s global updates, whatever the
// backend. Only the ranks listed in eval_ranks evaluate (default rank 0):
// under synchronous training every rank holds the same model, and several
// ranks usually share a few cores.
//
// Thread-safety: a Trainer runs on one thread. Several trainers (with their
// own backends) may run in parallel threads of one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "train/backend.h"
#include "train/batcher.h"
#include "train/fashion_mnist.h"
#include "train/metrics.h"
#include "train/model_layout.h"
#include "train/network.h"
#include "train/straggler.h"

namespace serene::train {

struct TrainerOptions {
  ModelKind model = ModelKind::kMlp;
  double learning_rate = 0.04;  // SGD step size; each rank pushes −lr/N · v
  // SGD momentum μ in [0, 1), kept by each rank for its own gradients:
  // v = μ·v + g, and v is what it pushes (v = g when μ = 0). Under SYNC the
  // ranks' velocities add up to the velocity of the summed gradient, so the
  // job trains as one momentum SGD on the global batch.
  double momentum = 0;
  size_t batch_size = 256;      // examples per rank per iteration
  uint64_t seed = 1;            // initial model, data partition/shuffles, stragglers
  int64_t max_steps = 0;        // iterations; 0 = no limit
  double time_limit_s = 0;      // seconds of run clock; 0 = no limit
  double target_accuracy = 0;   // stop when test accuracy >= this; 0 = never
  int64_t eval_every = 50;      // steps between evaluation/timeline points (>= 1)
  size_t eval_samples = 0;      // first n test examples; 0 = all 10000
  std::vector<int> eval_ranks = {0};
  // Each step's computation lasts at least this long, the rest of it slept:
  // a heavier model emulated without its CPU, so that ranks sharing a few
  // cores still compute side by side, as ranks with a core each would
  // (issue 30: real runs on 2 cores otherwise take turns and see less
  // staleness than the simulator's ranks). 0 = none. It counts from when
  // the pulled data reached the host (SyncTiming::data_arrival), or from the
  // end of an evaluation before the step: a rank that got a core late sleeps
  // less, as a rank with a core of its own would have started on time. A
  // straggler's sleep is relative to at least the floor.
  double compute_floor_s = 0;
  StragglerSpec straggler;  // pattern applied on straggler_ranks
  std::vector<int> straggler_ranks;
  // Called after each evaluation before a step with the time it took: a
  // pause of this rank's steps that the others wait for under a barrier
  // (serene-train reports it to the switch's runtime API, ReportPause, so
  // that a policy does not take it for a straggler). May be empty.
  std::function<void(double seconds)> report_pause;
  int64_t log_every = 0;        // progress log lines; 0 = every eval_every steps, < 0 = never
  bool log_iterations = false;  // keep RunMetrics::iteration_log
};

class Trainer {
 public:
  // Validates the options, builds the network and this rank's batcher.
  // `test` may be null if this rank does not evaluate.
  // REQUIRES: train, test and backend outlive the trainer.
  // Errors: InvalidArgument for inconsistent options.
  static Result<std::unique_ptr<Trainer>> Create(const TrainerOptions& options,
                                                 const Dataset& train, const Dataset* test,
                                                 Backend& backend);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Runs the loop to its end. Call once.
  Result<RunMetrics> Run();

  // This rank's model (after Run: the final one).
  std::span<const float> model() const { return model_; }
  // Whether this rank evaluates test accuracy.
  bool evaluates() const { return evaluates_; }

 private:
  Trainer(const TrainerOptions& options, const Dataset* test, Backend& backend,
          std::unique_ptr<Network> network, std::unique_ptr<ShardedBatcher> batcher);

  Status Evaluate(RunMetrics* m, TimelinePoint* point);
  void SleepFor(double seconds);
  void LogProgress(const RunMetrics& m, double now_s, double train_loss) const;

  const TrainerOptions options_;
  const Dataset* test_;
  Backend& backend_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<ShardedBatcher> batcher_;
  std::unique_ptr<StragglerInjector> straggler_;  // null if this rank is not a straggler
  bool evaluates_ = false;
  bool ran_ = false;
  std::vector<float> model_;
  std::vector<float> grad_;
  std::vector<float> update_;
  std::vector<float> velocity_;  // empty unless momentum > 0
  Batch batch_;
};

}  // namespace serene::train
