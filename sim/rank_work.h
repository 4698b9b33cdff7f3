// RankWork: what the simulated ranks compute between a pull and a push
// (docs/simulator.md). Two implementations:
//   - TorchWork (torch_work.h): the real training math — libtorch gradients of
//     the real model on each rank's shard of Fashion-MNIST, one rank at a
//     time, and the real evaluation on the test set;
//   - TimingWork (below): no math at all, zero updates, for barrier and policy
//     studies at up to the data plane's rank limit.
// Either way the virtual time a step takes comes from the simulator's compute
// model, never from how long the math took on this machine.
//
// Values cross in the switch's fixed point (the job's scale), as they do on
// the wire.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "common/status.h"

namespace serene::sim {

struct Evaluation {
  double accuracy = 0;
  double loss = 0;
};

class RankWork {
 public:
  virtual ~RankWork() = default;

  // Values in the model.
  virtual size_t elements() const = 0;
  // False for timing-only work: ranks then neither keep the values they pull
  // nor fill their updates (the packets still carry rows of the right size).
  virtual bool has_data() const = 0;

  // Rank 0's initial model (fixed point), INC'd at the seeding clock.
  virtual Status InitialModel(std::span<int32_t> out) = 0;

  // One SGD step of `rank` on its next batch, from the model it pulled:
  // writes update = −lr/N · gradient (fixed point) and returns the batch's
  // training loss.
  virtual Result<double> Step(int rank, std::span<const int32_t> pulled,
                              std::span<int32_t> update) = 0;

  // Test accuracy and loss of a pulled model; nullopt if this work does not
  // evaluate.
  virtual Result<std::optional<Evaluation>> Evaluate(std::span<const int32_t> pulled) = 0;
};

// Timing only: no data, no evaluation.
class TimingWork final : public RankWork {
 public:
  explicit TimingWork(size_t elements) : elements_(elements) {}
  size_t elements() const override { return elements_; }
  bool has_data() const override { return false; }
  Status InitialModel(std::span<int32_t>) override { return Status::Ok(); }
  Result<double> Step(int, std::span<const int32_t>, std::span<int32_t>) override { return 0.0; }
  Result<std::optional<Evaluation>> Evaluate(std::span<const int32_t>) override {
    return std::optional<Evaluation>();
  }

 private:
  size_t elements_;
};

}  // namespace serene::sim
