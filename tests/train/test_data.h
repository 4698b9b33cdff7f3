// Shared fixtures of the train tests: the real Fashion-MNIST sets, loaded
// once per test binary, and a scratch directory per test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "train/fashion_mnist.h"

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

}  // namespace serene::train::testing
