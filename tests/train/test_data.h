// Shared fixtures of the train tests: the real Fashion-MNIST sets, loaded
// once per test binary, and a scratch directory per test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective/gloo_algorithm.h"
#include "train/backend.h"
#include "train/fashion_mnist.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace serene::train::testing {

// The training and test sets from DefaultDataDir(); a test fails (with the
// loader's message, which names the package) if they are missing.
const Dataset& TrainSet();
const Dataset& TestSet();

// A fresh, empty directory under the system temp dir, removed at destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string Sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// What one rank of a threaded run ended with.
struct RankResult {
  Status status;
  RunMetrics metrics;
  std::vector<float> model;
};

// Makes rank r's backend (on rank r's thread).
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(int rank)>;

// Trains `world` ranks on threads of this process, each with its own backend
// (its own Gloo context or switch client), like separate processes would, on
// TrainSet() and evaluating on TestSet().
std::vector<RankResult> TrainRanks(int world, const TrainerOptions& options,
                                   const BackendFactory& make_backend);

// Gloo backends over TCP on loopback, meeting in a file store at
// `rendezvous_dir`, running `algorithm`'s allreduce.
BackendFactory GlooRanks(int world, const std::string& rendezvous_dir,
                         collective::GlooAlgorithm algorithm = collective::GlooAlgorithm::kDefault);

}  // namespace serene::train::testing
