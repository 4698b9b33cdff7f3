// SereneBackend: a training rank synchronized through a Serene switch (the
// switch's aggregation table holds the model; see backend.h and
// include/serene/client.h).
//
//   Initialize: JOIN; rank 0 seeds the table with its initial model at clock
//               0, every rank CLOCKs 0 and then READs the model.
//   Pull:       READ every row at the current clock.
//   Push:       INC the update, then CLOCK: blocks until the switch's barrier
//               policy releases this rank (the time is the barrier wait).
//   Finished:   a RELEASE carried the FINISHED flag (another rank ended the job).
//   Finish:     LEAVE with FINISHED: ends the job for every rank.
//   Close:      LEAVE, so the barrier stops counting this rank.
//
// Thread-safety: one training thread.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "common/status.h"
#include "serene/client.h"
#include "train/backend.h"

namespace serene::train {

class SereneBackend final : public Backend {
 public:
  // Connects and JOINs. The job's element count must equal `model_elements`
  // (a switch job sized for another model is refused with both numbers).
  static Result<std::unique_ptr<SereneBackend>> Connect(const ClientOptions& options,
                                                        size_t model_elements);

  std::string_view name() const override { return "serene"; }
  int rank() const override { return static_cast<int>(rank_); }
  int world_size() const override { return static_cast<int>(client_->info().workers); }

  Status Initialize(std::span<float> model) override;
  Status Pull(std::span<float> model, SyncTiming* timing) override;
  Status Push(std::span<const float> update, std::span<float> model, SyncTiming* timing) override;
  bool Finished() override { return client_->finished(); }
  Status Finish() override;
  Status Close() override;

  const ClientStats& stats() const { return client_->stats(); }
  // RELEASE of the last clock (policy epoch, low/high clocks).
  const ClockResult& last_release() const { return last_release_; }

 private:
  SereneBackend(std::unique_ptr<Client> client, uint32_t rank)
      : client_(std::move(client)), rank_(rank) {}

  std::unique_ptr<Client> client_;
  uint32_t rank_;
  bool left_ = false;
  ClockResult last_release_;
};

}  // namespace serene::train
