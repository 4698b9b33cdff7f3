// Fashion-MNIST: the IDX reader and the in-memory dataset.
//
// The data come from Debian's `dataset-fashion-mnist` package: four gzipped
// IDX files under /usr/share/datasets/fashion-mnist/ (train-images-idx3-ubyte.gz,
// train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz). They are read directly with zlib (an
// uncompressed file without the .gz suffix is accepted too) and validated:
// magic numbers, 28x28 geometry, matching counts, exact file length, labels in
// 0..9. Every failure names the path and the package to (re)install.
//
// Pixels stay uint8 in memory (47 MB for the training set instead of 188 MB
// as float, which matters with several ranks on one host); NormalizePixels
// turns them into the float inputs the models see.
//
// Thread-safety: a Dataset is immutable after loading; share it freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace serene::train {

inline constexpr char kDefaultDataDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr char kDataPackage[] = "dataset-fashion-mnist";
inline constexpr int kNumClasses = 10;
inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // ubyte, 3 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // ubyte, 1 dimension
// Mean and standard deviation of the Fashion-MNIST training pixels in [0, 1].
inline constexpr float kPixelMean = 0.2860f;
inline constexpr float kPixelStd = 0.3530f;

struct Dataset {
  size_t size = 0;  // number of examples
  int rows = 0;
  int cols = 0;
  std::vector<uint8_t> pixels;  // size * rows * cols, row-major per image
  std::vector<uint8_t> labels;  // size, each in [0, kNumClasses)

  size_t image_size() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
  std::span<const uint8_t> image(size_t i) const {
    return {pixels.data() + i * image_size(), image_size()};
  }
};

enum class Split { kTrain, kTest };

// The data directory: $SERENE_DATA_DIR if set and non-empty, else kDefaultDataDir.
std::string DefaultDataDir();

// Loads one split from `dir` (60000 training or 10000 test examples).
// Errors: NotFound if a file is missing, IoError if a file is corrupt; both
// name the path and the package dataset-fashion-mnist.
Result<Dataset> LoadFashionMnist(const std::string& dir, Split split);

// Reads and cross-checks an IDX image file and an IDX label file (gzipped or
// not). `expected_size`, if non-zero, is the number of examples required.
Result<Dataset> ReadIdxPair(const std::string& images_path, const std::string& labels_path,
                            size_t expected_size = 0);

// dst[i] = (src[i] / 255 - kPixelMean) / kPixelStd.  REQUIRES: dst.size() == src.size().
void NormalizePixels(std::span<const uint8_t> src, std::span<float> dst);

}  // namespace serene::train
