#include "train/gloo_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
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

// Every allreduce algorithm the backend takes, 2 to 5 ranks, with values
// whose float sum depends on the order of the additions: each rank must end
// with the same bits and the sum (within rounding), the stop round must work
// the same way, and Close must let every rank go.
class GlooBackendAlgorithmTest
    : public ::testing::TestWithParam<std::tuple<collective::GlooAlgorithm, int>> {};

TEST_P(GlooBackendAlgorithmTest, SumsBitIdenticallyOnEveryRankAndStopsTogether) {
  const int world = std::get<1>(GetParam());
  constexpr size_t kSize = 79510;
  constexpr int kRounds = 3;
  ScratchDir dir;
  // update(rank, round, i): a spread of magnitudes, so rounding differs by order.
  auto update_value = [](int rank, int round, size_t i) {
    const double x = static_cast<double>(
        (i * 2654435761u + static_cast<size_t>(rank) * 97 + static_cast<size_t>(round) * 7919) %
        100003);
    return static_cast<float>((x - 50000.0) / 3.0 * ((i % 7 == 0) ? 1e-4 : 1.0));
  };
  std::vector<std::vector<float>> models(world);
  std::vector<Status> statuses(world);
  std::vector<bool> finished(world);
  RunRanks(world, [&](int rank) {
    GlooOptions o = Options(dir, rank, world);
    o.algorithm = std::get<0>(GetParam());
    auto backend = GlooBackend::Connect(o);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    GlooBackend& b = **backend;
    std::vector<float> model(kSize, 0.5f);
    ASSERT_TRUE(b.Initialize(model).ok());
    std::vector<float> update(kSize);
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < kSize; ++i) update[i] = update_value(rank, round, i);
      SyncTiming timing;
      Status s = b.Push(update, model, &timing);
      if (!s.ok()) {
        statuses[rank] = s;
        return;
      }
    }
    models[rank] = model;
    // The stop round: the last rank ends the job, the others' updates are dropped.
    if (rank == world - 1) {
      statuses[rank] = b.Finish();
    } else {
      statuses[rank] = b.Push(update, model, nullptr);
      EXPECT_EQ(model, models[rank]);
    }
    finished[rank] = b.Finished();
    if (statuses[rank].ok()) statuses[rank] = b.Close();
  });
  for (int r = 0; r < world; ++r) {
    SCOPED_TRACE(r);
    ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
    EXPECT_TRUE(finished[r]);
    ASSERT_EQ(models[r].size(), kSize);
    EXPECT_EQ(std::memcmp(models[r].data(), models[0].data(), kSize * sizeof(float)), 0);
  }
  for (size_t i = 0; i < kSize; i += 101) {
    double expected = 0.5, magnitude = 0.5;
    for (int round = 0; round < kRounds; ++round) {
      for (int rank = 0; rank < world; ++rank) {
        expected += update_value(rank, round, i);
        magnitude += std::abs(update_value(rank, round, i));
      }
    }
    // Float sums of the terms in any order: within a few ulps of their magnitude.
    ASSERT_NEAR(models[0][i], expected, 1e-6 * magnitude) << "element " << i;
  }
}

std::string AlgorithmName(
    const ::testing::TestParamInfo<std::tuple<collective::GlooAlgorithm, int>>& p) {
  std::string name(collective::GlooAlgorithmName(std::get<0>(p.param)));
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_" + std::to_string(std::get<1>(p.param)) + "_ranks";
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, GlooBackendAlgorithmTest,
    ::testing::Combine(::testing::Values(collective::GlooAlgorithm::kDefault,
                                         collective::GlooAlgorithm::kHalvingDoubling,
                                         collective::GlooAlgorithm::kRingChunked),
                       ::testing::Values(2, 3, 4, 5)),
    AlgorithmName);

// Gloo's ring and bcube algorithm classes failed the test above (ring: the
// ranks' sums differ in their last bits from 3 ranks on; bcube: wrong sums
// for 3 and 5 ranks, ranks that differ for 4), so the backend refuses them.
TEST(GlooBackendTest, RefusesAlgorithmsThatBreakBitIdenticalRanks) {
  ScratchDir dir;
  for (collective::GlooAlgorithm a : collective::AllGlooAlgorithms()) {
    SCOPED_TRACE(collective::GlooAlgorithmName(a));
    const bool taken =
        a != collective::GlooAlgorithm::kRing && a != collective::GlooAlgorithm::kBcube;
    EXPECT_EQ(CheckGlooAlgorithm(a).ok(), taken);
    if (taken) continue;
    GlooOptions o = Options(dir, 0, 1);
    o.algorithm = a;
    auto backend = GlooBackend::Connect(o);
    ASSERT_FALSE(backend.ok());
    EXPECT_EQ(backend.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(backend.status().message().find("takes default, halving-doubling or ring-chunked"),
              std::string::npos)
        << backend.status().message();
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
  for (collective::GlooAlgorithm a :
       {collective::GlooAlgorithm::kDefault, collective::GlooAlgorithm::kHalvingDoubling}) {
    SCOPED_TRACE(collective::GlooAlgorithmName(a));
    ScratchDir dir;
    GlooOptions o = Options(dir, 0, 1);
    o.algorithm = a;
    auto backend = GlooBackend::Connect(o);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    std::vector<float> model(10, 1.0f), update(10, 0.5f);
    ASSERT_TRUE((*backend)->Initialize(model).ok());
    ASSERT_TRUE((*backend)->Push(update, model, nullptr).ok());
    EXPECT_EQ(model[9], 1.5f);
    ASSERT_TRUE((*backend)->Finish().ok());
    EXPECT_TRUE((*backend)->Finished());
  }
}

}  // namespace
}  // namespace serene::train
