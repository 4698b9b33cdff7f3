// GlooBackend: the host-based synchronous baseline (DESIGN.md §6): every rank
// keeps the model, and each iteration allreduce-sums the ranks' updates with
// Gloo over TCP and adds the sum to its model — a BSP barrier every step, no
// switch.
//
// Rendezvous goes through a gloo::rendezvous::FileStore in a directory every
// rank can reach (same host, or a shared filesystem), under a per-run prefix;
// use a fresh directory or a new run id per run, since stale keys of an
// earlier run with the same prefix would be read back. Each rank binds its
// TCP listener to `hostname` (or the address of `iface`).
//
// Protocol. The allreduce buffer holds the model's update plus one trailing
// float, the stop flag. Push sends (update, 0); Finish sends (0, 1) in the
// same collective round. A rank whose Push receives a non-zero flag drops
// that round's sum and reports Finished(), so every rank ends with the model
// the finishing rank held; ranks therefore stay bit-identical. Initialize
// broadcasts rank 0's parameter count (to fail fast on mismatched --model)
// and then its model.
//
// Errors: Gloo exceptions (timeouts, a peer that died, refused connections)
// come back as Status::Unavailable naming the operation; after one the
// backend is unusable.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "train/backend.h"

namespace serene::train {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  std::string rendezvous_dir;          // FileStore directory, created if missing (required)
  std::string run_id = "serene";       // key prefix inside the store
  std::string hostname = "127.0.0.1";  // address to bind and advertise (if iface is empty)
  std::string iface;                   // network interface to bind instead, e.g. "eth0"
  // Timeout of the rendezvous and of every collective. A failure straggler
  // (which stops one rank for minutes) needs more than its duration.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

class GlooBackend final : public Backend {
 public:
  // Connects to every other rank (blocks until all have joined or the
  // timeout). Errors: InvalidArgument for bad options, Unavailable otherwise.
  static Result<std::unique_ptr<GlooBackend>> Connect(const GlooOptions& options);
  ~GlooBackend() override;

  std::string_view name() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Status Initialize(std::span<float> model) override;
  Status Pull(std::span<float> model, SyncTiming* timing) override;
  Status Push(std::span<const float> update, std::span<float> model, SyncTiming* timing) override;
  bool Finished() override { return finished_; }
  Status Finish() override;

 private:
  struct Impl;
  GlooBackend(int rank, int world_size, std::unique_ptr<Impl> impl);
  Status Allreduce(const char* what);

  const int rank_;
  const int world_size_;
  std::unique_ptr<Impl> impl_;
  bool finished_ = false;
};

}  // namespace serene::train
