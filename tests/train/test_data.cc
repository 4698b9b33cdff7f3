#include "tests/train/test_data.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

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

}  // namespace serene::train::testing
