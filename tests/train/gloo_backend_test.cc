#include "train/gloo_backend.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

using testing::ScratchDir;

GlooOptions Options(const ScratchDir& dir, int rank, int world) {
  GlooOptions o;
  o.rank = rank;
  o.world_size = world;
  o.rendezvous_dir = dir.Sub("rdv");
  o.timeout = std::chrono::seconds(30);
  return o;
}

// Runs fn(rank) on `world` threads and joins them.
void RunRanks(int world, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

TEST(GlooBackendTest, BroadcastsSumsAndStopsTogether) {
  constexpr int kWorld = 3;
  constexpr size_t kSize = 1000;
  ScratchDir dir;
  std::vector<std::vector<float>> models(kWorld);
  std::vector<std::vector<float>> after_finish(kWorld);
  std::vector<bool> finished(kWorld);
  RunRanks(kWorld, [&](int rank) {
    auto backend = GlooBackend::Connect(Options(dir, rank, kWorld));
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    GlooBackend& b = **backend;
    EXPECT_EQ(b.rank(), rank);
    EXPECT_EQ(b.world_size(), kWorld);
    std::vector<float> model(kSize, static_cast<float>(100 * rank));  // only rank 0's counts
    model[0] = static_cast<float>(rank);
    ASSERT_TRUE(b.Initialize(model).ok());
    EXPECT_EQ(model[0], 0.0f);
    EXPECT_EQ(model[1], 0.0f);

    // Round 1: update of rank r is r+1 everywhere: sum 1+2+3 = 6.
    std::vector<float> update(kSize, static_cast<float>(rank + 1));
    SyncTiming timing;
    ASSERT_TRUE(b.Pull(model, &timing).ok());
    ASSERT_TRUE(b.Push(update, model, &timing).ok());
    EXPECT_FALSE(b.Finished());
    EXPECT_GE(timing.barrier_wait_s, 0.0);
    models[rank] = model;

    // Round 2: rank 1 ends the job; the others' updates are dropped.
    if (rank == 1) {
      ASSERT_TRUE(b.Finish().ok());
    } else {
      ASSERT_TRUE(b.Push(update, model, &timing).ok());
    }
    finished[rank] = b.Finished();
    after_finish[rank] = model;
  });
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE(r);
    ASSERT_EQ(models[r].size(), kSize);
    for (float v : models[r]) ASSERT_EQ(v, 6.0f);
    EXPECT_TRUE(finished[r]);
    EXPECT_EQ(after_finish[r], models[r]);
  }
}

TEST(GlooBackendTest, MismatchedModelSizesFailClearly) {
  ScratchDir dir;
  Status rank1;
  RunRanks(2, [&](int rank) {
    GlooOptions o = Options(dir, rank, 2);
    o.timeout = std::chrono::seconds(5);
    auto backend = GlooBackend::Connect(o);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    std::vector<float> model(rank == 0 ? 100 : 200);
    Status s = (*backend)->Initialize(model);
    if (rank == 1) rank1 = s;  // rank 0 may or may not notice before rank 1 leaves
  });
  EXPECT_EQ(rank1.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(rank1.message().find("rank 0's model has 100 parameters"), std::string::npos)
      << rank1.message();
}

TEST(GlooBackendTest, RejectsBadOptions) {
  ScratchDir dir;
  GlooOptions o = Options(dir, 2, 2);
  EXPECT_EQ(GlooBackend::Connect(o).status().code(), Status::Code::kInvalidArgument);
  o = Options(dir, 0, 1);
  o.rendezvous_dir.clear();
  EXPECT_EQ(GlooBackend::Connect(o).status().code(), Status::Code::kInvalidArgument);
}

TEST(GlooBackendTest, MissingPeerTimesOut) {
  ScratchDir dir;
  GlooOptions o = Options(dir, 0, 2);
  o.timeout = std::chrono::seconds(1);
  auto backend = GlooBackend::Connect(o);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(backend.status().message().find("rendezvous of rank 0/2"), std::string::npos)
      << backend.status().message();
}

TEST(GlooBackendTest, SingleRankWorks) {
  ScratchDir dir;
  auto backend = GlooBackend::Connect(Options(dir, 0, 1));
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  std::vector<float> model(10, 1.0f), update(10, 0.5f);
  ASSERT_TRUE((*backend)->Initialize(model).ok());
  ASSERT_TRUE((*backend)->Push(update, model, nullptr).ok());
  EXPECT_EQ(model[9], 1.5f);
  ASSERT_TRUE((*backend)->Finish().ok());
  EXPECT_TRUE((*backend)->Finished());
}

}  // namespace
}  // namespace serene::train
