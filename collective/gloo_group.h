// GlooGroup: N processes connected by Gloo over TCP (a full mesh), for host
// collectives: allreduce with a chosen algorithm, broadcast and barrier.
//
// Rendezvous goes through a gloo::rendezvous::FileStore in a directory every
// rank can reach (same host, or a shared filesystem), under a per-run prefix;
// use a fresh directory or a new run id per run, since stale keys of an
// earlier run with the same prefix would be read back. Each rank binds its
// TCP listener to `hostname` (or the address of `iface`).
//
// The algorithm classes (everything but kDefault) are built once per buffer
// (address, length, type) and reused while the caller passes the same
// buffer; every rank must call the collectives in the same order with the
// same algorithm and length.
//
// Errors: Gloo exceptions (timeouts, a peer that died, refused connections)
// come back as Status::Unavailable naming the operation; after one the group
// is unusable.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "collective/gloo_algorithm.h"
#include "common/status.h"

namespace serene::collective {

struct GlooGroupOptions {
  int rank = 0;
  int world_size = 1;
  std::string rendezvous_dir;          // FileStore directory, created if missing (required)
  std::string run_id = "serene";       // key prefix inside the store
  std::string hostname = "127.0.0.1";  // address to bind and advertise (if iface is empty)
  std::string iface;                   // network interface to bind instead, e.g. "eth0"
  // Timeout of the rendezvous and of every collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

class GlooGroup {
 public:
  // Connects to every other rank (blocks until all have joined or the
  // timeout). Errors: InvalidArgument for bad options, Unavailable otherwise.
  static Result<std::unique_ptr<GlooGroup>> Connect(const GlooGroupOptions& options);
  ~GlooGroup();
  GlooGroup(const GlooGroup&) = delete;
  GlooGroup& operator=(const GlooGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // Replaces `data` on every rank by the element-wise sum over the ranks.
  Status Allreduce(std::span<float> data, GlooAlgorithm algorithm);
  Status Allreduce(std::span<int32_t> data, GlooAlgorithm algorithm);
  // Copies `root`'s `data` to every rank.
  Status Broadcast(std::span<float> data, int root);
  Status Broadcast(std::span<int64_t> data, int root);
  // Returns once every rank called it.
  Status Barrier();

 private:
  struct Impl;
  GlooGroup(int rank, int world_size, std::unique_ptr<Impl> impl);

  const int rank_;
  const int world_size_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace serene::collective
