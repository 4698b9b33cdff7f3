#include "tests/train/test_data.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "train/gloo_backend.h"

namespace serene::train::testing {
namespace {

const Dataset& LoadOrDie(Split split) {
  Result<Dataset> r = LoadFashionMnist(DefaultDataDir(), split);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    std::abort();
  }
  return *new Dataset(std::move(*r));  // lives until exit
}

}  // namespace

const Dataset& TrainSet() {
  static const Dataset& d = LoadOrDie(Split::kTrain);
  return d;
}

const Dataset& TestSet() {
  static const Dataset& d = LoadOrDie(Split::kTest);
  return d;
}

ScratchDir::ScratchDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("serene-train-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<RankResult> TrainRanks(int world, const TrainerOptions& options,
                                   const BackendFactory& make_backend) {
  std::vector<RankResult> results(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      RankResult& out = results[rank];
      auto backend = make_backend(rank);
      if (!backend.ok()) {
        out.status = backend.status();
        return;
      }
      auto trainer = Trainer::Create(options, TrainSet(), &TestSet(), **backend);
      if (!trainer.ok()) {
        out.status = trainer.status();
        return;
      }
      Result<RunMetrics> m = (*trainer)->Run();
      out.status = m.status();
      if (m.ok()) out.metrics = *m;
      out.model.assign((*trainer)->model().begin(), (*trainer)->model().end());
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

BackendFactory GlooRanks(int world, const std::string& rendezvous_dir,
                         collective::GlooAlgorithm algorithm) {
  return [world, rendezvous_dir, algorithm](int rank) -> Result<std::unique_ptr<Backend>> {
    GlooOptions g;
    g.rank = rank;
    g.world_size = world;
    g.rendezvous_dir = rendezvous_dir;
    g.algorithm = algorithm;
    g.timeout = std::chrono::seconds(60);
    auto b = GlooBackend::Connect(g);
    if (!b.ok()) return b.status();
    return std::unique_ptr<Backend>(std::move(*b));
  };
}

}  // namespace serene::train::testing
