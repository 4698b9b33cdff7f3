#include "train/batcher.h"

#include <numeric>
#include <string>
#include <utility>

namespace serene::train {
namespace {

constexpr uint64_t kPartitionStream = 0x7061727469;  // "parti"
constexpr uint64_t kShuffleStream = 0x73687566;      // "shuf"

// Fisher-Yates with our own Rng, so the order does not depend on the C++ library.
void Shuffle(std::vector<uint32_t>* v, Rng* rng) {
  for (size_t i = v->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng->Below(i));
    std::swap((*v)[i - 1], (*v)[j]);
  }
}

}  // namespace

Result<std::unique_ptr<ShardedBatcher>> ShardedBatcher::Create(const Dataset& data,
                                                               const BatcherOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(options.rank) +
                                   " is not in [0, world size " +
                                   std::to_string(options.world_size) + ")");
  }
  if (options.batch_size == 0) return Status::InvalidArgument("batch size must be positive");
  std::vector<uint32_t> all(data.size);
  std::iota(all.begin(), all.end(), 0u);
  Rng partition(DeriveSeed(options.seed, kPartitionStream));
  Shuffle(&all, &partition);
  const size_t n = static_cast<size_t>(options.world_size);
  const size_t r = static_cast<size_t>(options.rank);
  const size_t begin = data.size * r / n;
  const size_t end = data.size * (r + 1) / n;
  if (end - begin < options.batch_size) {
    return Status::InvalidArgument(
        "rank " + std::to_string(options.rank) + "'s shard has " + std::to_string(end - begin) +
        " examples, fewer than one batch of " + std::to_string(options.batch_size) +
        "; lower --batch or the world size");
  }
  std::vector<uint32_t> shard(all.begin() + static_cast<std::ptrdiff_t>(begin),
                              all.begin() + static_cast<std::ptrdiff_t>(end));
  return std::unique_ptr<ShardedBatcher>(new ShardedBatcher(data, options, std::move(shard)));
}

ShardedBatcher::ShardedBatcher(const Dataset& data, const BatcherOptions& options,
                               std::vector<uint32_t> shard)
    : data_(data),
      batch_size_(options.batch_size),
      shard_(std::move(shard)),
      order_(shard_),
      rng_(DeriveSeed(options.seed + static_cast<uint64_t>(options.rank), kShuffleStream)) {
  Reshuffle();
}

void ShardedBatcher::Reshuffle() {
  order_ = shard_;
  Shuffle(&order_, &rng_);
  cursor_ = 0;
}

void ShardedBatcher::Next(Batch* batch) {
  if (cursor_ + batch_size_ > order_.size()) {
    ++epoch_;
    Reshuffle();
  }
  const size_t image_size = data_.image_size();
  batch->size = batch_size_;
  batch->image_size = image_size;
  batch->images.resize(batch_size_ * image_size);
  batch->labels.resize(batch_size_);
  batch->indices.resize(batch_size_);
  for (size_t i = 0; i < batch_size_; ++i) {
    const uint32_t index = order_[cursor_ + i];
    NormalizePixels(data_.image(index), {batch->images.data() + i * image_size, image_size});
    batch->labels[i] = data_.labels[index];
    batch->indices[i] = index;
  }
  cursor_ += batch_size_;
}

}  // namespace serene::train
