#include "train/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

std::unique_ptr<ShardedBatcher> Make(int rank, int world, size_t batch, uint64_t seed) {
  Result<std::unique_ptr<ShardedBatcher>> r =
      ShardedBatcher::Create(testing::TrainSet(), {rank, world, batch, seed});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(ShardedBatcherTest, ShardsAreDisjointAndCoverTheTrainingSet) {
  constexpr int kWorld = 3;
  std::set<uint32_t> seen;
  size_t total = 0;
  for (int r = 0; r < kWorld; ++r) {
    auto b = Make(r, kWorld, 256, 7);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->shard().size(), 20000u);
    total += b->shard().size();
    seen.insert(b->shard().begin(), b->shard().end());
  }
  EXPECT_EQ(total, 60000u);
  EXPECT_EQ(seen.size(), 60000u);
}

TEST(ShardedBatcherTest, BatchesComeFromTheShardAndMatchTheData) {
  auto b = Make(1, 4, 100, 3);
  ASSERT_NE(b, nullptr);
  const std::set<uint32_t> shard(b->shard().begin(), b->shard().end());
  const Dataset& d = testing::TrainSet();
  Batch batch;
  std::vector<float> expected(784);
  for (int i = 0; i < 5; ++i) {
    b->Next(&batch);
    ASSERT_EQ(batch.size, 100u);
    ASSERT_EQ(batch.images.size(), 100u * 784u);
    for (size_t k = 0; k < batch.size; ++k) {
      const uint32_t index = batch.indices[k];
      ASSERT_TRUE(shard.count(index)) << index;
      EXPECT_EQ(batch.labels[k], d.labels[index]);
      NormalizePixels(d.image(index), expected);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), batch.images.begin() + k * 784));
    }
  }
}

TEST(ShardedBatcherTest, EpochVisitsEachExampleOnceAndReshuffles) {
  // 60000 / 4 = 15000 examples, batch 1000: exactly 15 batches per epoch.
  auto b = Make(2, 4, 1000, 11);
  ASSERT_NE(b, nullptr);
  Batch batch;
  std::vector<uint32_t> first, second;
  for (int i = 0; i < 15; ++i) {
    b->Next(&batch);
    first.insert(first.end(), batch.indices.begin(), batch.indices.end());
  }
  EXPECT_EQ(b->epoch(), 0);
  for (int i = 0; i < 15; ++i) {
    b->Next(&batch);
    second.insert(second.end(), batch.indices.begin(), batch.indices.end());
  }
  EXPECT_EQ(b->epoch(), 1);
  EXPECT_EQ(std::set<uint32_t>(first.begin(), first.end()).size(), 15000u);
  EXPECT_NE(first, second);  // reshuffled
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(first, second);  // same shard
}

TEST(ShardedBatcherTest, DropsTheIncompleteLastBatch) {
  // 15000 examples, batch 4096: 3 full batches, then a new epoch.
  auto b = Make(0, 4, 4096, 1);
  ASSERT_NE(b, nullptr);
  Batch batch;
  for (int i = 0; i < 3; ++i) b->Next(&batch);
  EXPECT_EQ(b->epoch(), 0);
  b->Next(&batch);
  EXPECT_EQ(b->epoch(), 1);
  EXPECT_EQ(batch.size, 4096u);
}

TEST(ShardedBatcherTest, DeterministicPerSeedAndRank) {
  Batch a, b, c, d;
  Make(0, 2, 64, 5)->Next(&a);
  Make(0, 2, 64, 5)->Next(&b);
  Make(1, 2, 64, 5)->Next(&c);
  Make(0, 2, 64, 6)->Next(&d);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_NE(a.indices, c.indices);
  EXPECT_NE(a.indices, d.indices);
}

TEST(ShardedBatcherTest, RejectsBadOptions) {
  const Dataset& d = testing::TrainSet();
  EXPECT_FALSE(ShardedBatcher::Create(d, {2, 2, 256, 1}).ok());
  EXPECT_FALSE(ShardedBatcher::Create(d, {-1, 2, 256, 1}).ok());
  EXPECT_FALSE(ShardedBatcher::Create(d, {0, 2, 0, 1}).ok());
  Result<std::unique_ptr<ShardedBatcher>> r = ShardedBatcher::Create(d, {0, 1000, 256, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fewer than one batch"), std::string::npos);
}

}  // namespace
}  // namespace serene::train
