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
// Transport. The collectives are collective::GlooGroup's (a full mesh over
// TCP); `algorithm` chooses the allreduce: `default` is gloo::allreduce with
// default options, what PyTorch's Gloo process group runs; halving-doubling
// and ring-chunked are Gloo's algorithm classes. Each of these leaves the
// same bits on every rank, so the ranks stay bit-identical whichever is
// chosen; all ranks must choose the same. Gloo's `ring` and `bcube` are
// refused (CheckGlooAlgorithm). Close is a barrier: a rank that returned
// from the last allreduce of an algorithm class may still have messages in
// flight, and a peer that tore its connections down at once made the others
// fail with "Connection closed by peer" (seen with halving-doubling).
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "collective/gloo_algorithm.h"
#include "collective/gloo_group.h"
#include "common/status.h"
#include "train/backend.h"

namespace serene::train {

// The group's options (rank, world_size, rendezvous_dir — required —,
// run_id, hostname or iface, timeout; collective/gloo_group.h), and the
// algorithm. The timeout bounds the rendezvous and every collective: a
// failure straggler (which stops one rank for minutes) needs more than its
// duration.
struct GlooOptions : collective::GlooGroupOptions {
  // The allreduce of every Push and Finish; the same on every rank.
  collective::GlooAlgorithm algorithm = collective::GlooAlgorithm::kDefault;
};

// Whether the backend runs `algorithm`: Ok for default, halving-doubling and
// ring-chunked. InvalidArgument, saying why, for ring (every rank adds the
// others' updates in its own order, so the ranks' models differ by
// rounding) and bcube (with this Gloo, wrong sums for 3 and 5 ranks and ranks
// that differ for 4).
Status CheckGlooAlgorithm(collective::GlooAlgorithm algorithm);

class GlooBackend final : public Backend {
 public:
  // Connects to every other rank (blocks until all have joined or the
  // timeout). Errors: InvalidArgument for bad options (an algorithm
  // CheckGlooAlgorithm refuses among them), Unavailable otherwise.
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
  // A barrier: no rank tears its connections down while a peer is still in
  // the last collective (see Transport).
  Status Close() override;

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
