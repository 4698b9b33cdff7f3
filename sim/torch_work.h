// TorchWork: the real training math for the simulator (rank_work.h) — the
// model of serene-train (train/network.h) on each rank's shard of
// Fashion-MNIST (train/batcher.h), one rank at a time on this thread, with
// the same initial model, data order, learning rate and update rule
// (−lr/N · gradient, or −lr/N · velocity with momentum: train/momentum.h) as
// a real rank, in the switch's fixed point.
//
// Libtorch stays behind this header (pimpl): it is compiled into
// torch_work.cc only.
#pragma once

#include <memory>

#include "sim/rank_work.h"
#include "train/fashion_mnist.h"
#include "train/model_layout.h"

namespace serene::sim {

struct TorchWorkOptions {
  train::ModelKind model = train::ModelKind::kMlp;
  int workers = 4;
  size_t batch = 256;
  double learning_rate = 0.04;
  double momentum = 0;  // per rank, as train::TrainerOptions::momentum
  uint64_t seed = 1;
  uint32_t scale_log2 = 24;
  size_t eval_samples = 0;  // first n test examples; 0 = all
};

class TorchWork final : public RankWork {
 public:
  // REQUIRES: train and test outlive the work. Errors: InvalidArgument for a
  // shard smaller than a batch; the network's creation errors.
  static Result<std::unique_ptr<TorchWork>> Create(const TorchWorkOptions& options,
                                                   const train::Dataset& train,
                                                   const train::Dataset& test);
  ~TorchWork() override;

  size_t elements() const override;
  bool has_data() const override { return true; }
  Status InitialModel(std::span<int32_t> out) override;
  Result<double> Step(int rank, std::span<const int32_t> pulled,
                      std::span<int32_t> update) override;
  Result<std::optional<Evaluation>> Evaluate(std::span<const int32_t> pulled) override;

 private:
  struct Impl;
  explicit TorchWork(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace serene::sim

namespace serene::sim {

// The compute model's time per step, measured once: the median wall time of
// `steps` gradient steps of the model at the batch size, on a private rank 0
// of a one-rank job (the simulated ranks' data order is untouched). Depends
// on this machine: pass the number back as a given compute time to repeat a
// simulation exactly.
Result<double> MeasureStepSeconds(const TorchWorkOptions& options, const train::Dataset& train,
                                  int steps = 15);

}  // namespace serene::sim
