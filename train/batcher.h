// ShardedBatcher: each rank's shard of the training set and the batches drawn
// from it.
//
// The training set is partitioned once by a permutation seeded with the job
// seed alone (identical on every rank); rank r of N takes the r-th of N
// contiguous, disjoint slices of it (sizes differ by at most one). The rank
// then walks its shard in an order reshuffled at the start of every epoch
// by an Rng seeded with DeriveSeed(seed + rank, ...), so runs are
// reproducible per rank and ranks see different orders. Batches are always
// full: an epoch's remainder smaller than a batch is skipped (drop-last), so
// every update −lr/N·g averages exactly batch_size examples on every rank.
//
// Thread-safety: not thread-safe; one batcher per rank/thread. The Dataset
// must outlive the batcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "train/fashion_mnist.h"
#include "train/rng.h"

namespace serene::train {

// One mini-batch, ready for the model.
struct Batch {
  size_t size = 0;                // examples
  size_t image_size = 0;          // floats per example (784)
  std::vector<float> images;      // size * image_size, normalized (NormalizePixels)
  std::vector<int64_t> labels;    // size, each in [0, kNumClasses)
  std::vector<uint32_t> indices;  // size, the examples' indices in the dataset
};

struct BatcherOptions {
  int rank = 0;
  int world_size = 1;
  size_t batch_size = 256;
  uint64_t seed = 1;
};

class ShardedBatcher {
 public:
  // Errors: InvalidArgument if rank/world_size/batch_size are out of range or
  // the rank's shard is smaller than one batch.
  static Result<std::unique_ptr<ShardedBatcher>> Create(const Dataset& data,
                                                        const BatcherOptions& options);

  ShardedBatcher(const ShardedBatcher&) = delete;
  ShardedBatcher& operator=(const ShardedBatcher&) = delete;

  // Fills *batch with the next batch_size examples of this rank's shard,
  // starting a new (reshuffled) epoch when the current one is exhausted.
  void Next(Batch* batch);

  // Dataset indices owned by this rank (the unshuffled shard).
  const std::vector<uint32_t>& shard() const { return shard_; }
  // Completed epochs over the shard.
  int64_t epoch() const { return epoch_; }

 private:
  ShardedBatcher(const Dataset& data, const BatcherOptions& options, std::vector<uint32_t> shard);
  void Reshuffle();

  const Dataset& data_;
  const size_t batch_size_;
  std::vector<uint32_t> shard_;
  std::vector<uint32_t> order_;  // shard_ in this epoch's order
  size_t cursor_ = 0;
  int64_t epoch_ = 0;
  Rng rng_;
};

}  // namespace serene::train
