// Backend: how a training worker synchronizes its model with the other ranks.
//
// The training loop (trainer.h) is written against this interface only. Per
// iteration it calls
//
//   Pull(model)  ->  one SGD step on a local batch  ->  Push(−lr/N · g, model)
//
// and the backend decides what "the model" is:
//   - Serene (client library, switch): the switch's aggregation table holds
//     the model. Initialize: rank 0 INCs its initial model at clock 0 and every
//     rank CLOCKs 0, then READs it. Pull: READ every row into `model`. Push:
//     INC every row of `update`, then CLOCK, blocking until the barrier policy
//     releases the rank (time spent there is its barrier wait). Finished: the
//     switch/controller flagged the job finished. Finish: mark it so.
//   - Gloo (gloo_backend.h), the host-based baseline: every rank keeps the model
//     locally. Initialize: broadcast rank 0's model. Pull: nothing. Push:
//     allreduce-sum the updates and add the sum to `model`, a synchronous
//     barrier. Finish: a collective round that tells everyone to stop.
//
// Stopping. Any rank may end the job (target accuracy reached, time limit):
// it calls Finish() *instead of* that iteration's Push and then stops calling
// Pull/Push. Every other rank learns it from Finished() (checked by the loop
// before Pull, after Pull and after Push) and stops too. A backend may drop
// the update of the Push during which it learned of the end (Gloo does, so
// that every rank ends with exactly the model the finishing rank evaluated).
// When every rank stops by itself (step limit) no Finish() is called.
//
// Errors: every method returns Status; a failed call ends the worker. Backends
// catch their library's exceptions and turn them into Status.
//
// Thread-safety: a backend is used by one training thread.
#pragma once

#include <chrono>
#include <span>
#include <string_view>

#include "common/status.h"

namespace serene::train {

// What a backend reports about one Pull or Push. The loop measures each call's
// wall time itself; this is the part of it the backend attributes to waiting
// for other ranks.
struct SyncTiming {
  // Serene: CLOCK sent until RELEASE received. Gloo: the whole allreduce (on a
  // synchronous collective, waiting for the slowest rank and moving the data
  // cannot be told apart).
  double barrier_wait_s = 0;
  // Pull: when the data it returned had all reached this host (Serene:
  // Client::data_arrival, the kernel's receive time), so a process that got
  // a core late knows when a rank with a core of its own would have started
  // computing. min(): unknown (Gloo), the call's return stands for it.
  std::chrono::steady_clock::time_point data_arrival = std::chrono::steady_clock::time_point::min();
};

class Backend {
 public:
  Backend() = default;
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // "gloo", "serene", ... (goes into the metrics).
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Called once, before training, with this rank's initial model (every rank
  // computes the same one from the seed, but only rank 0's counts). On return
  // every rank's `model` is rank 0's.
  virtual Status Initialize(std::span<float> model) = 0;

  // Start of an iteration: bring `model` up to date (may block).
  virtual Status Pull(std::span<float> model, SyncTiming* timing) = 0;

  // End of an iteration: contribute `update` (already scaled: −lr/N · g) and
  // complete the iteration; blocks as the synchronization policy says. May
  // write `model` (Gloo applies the global sum here; Serene leaves it to the
  // next Pull). REQUIRES: update.size() == model.size() == the model's size.
  virtual Status Push(std::span<const float> update, std::span<float> model,
                      SyncTiming* timing) = 0;

  // Whether another rank ended the job. Non-blocking.
  virtual bool Finished() = 0;

  // Ends the job for every rank. Called in place of an iteration's Push; the
  // caller stops afterwards. Gloo: a collective round, so it must be called
  // exactly where this rank would otherwise Push.
  virtual Status Finish() = 0;

  // This rank stops (called once by the loop when it ends, after Finish if
  // any). Serene: LEAVE, so the barrier no longer counts the rank. Gloo: a
  // barrier, so no rank closes its connections while a peer is still in the
  // last collective.
  virtual Status Close() { return Status::Ok(); }
};

}  // namespace serene::train
