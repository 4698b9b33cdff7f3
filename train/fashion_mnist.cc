#include "train/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <utility>

namespace serene::train {
namespace {

constexpr int kRows = 28;
constexpr int kCols = 28;
constexpr size_t kTrainSize = 60000;
constexpr size_t kTestSize = 10000;

std::string Hint() {
  return std::string("; install or reinstall the Debian package ") + kDataPackage +
         ", or point --data-dir / SERENE_DATA_DIR at a directory holding the Fashion-MNIST IDX "
         "files";
}

Status Corrupt(const std::string& path, const std::string& what) {
  return Status::IoError("corrupt Fashion-MNIST file " + path + ": " + what + Hint());
}

// Accepts `path` or, if it ends in .gz and is missing, the uncompressed twin.
Result<std::string> Locate(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  const std::string suffix = ".gz";
  if (path.size() > suffix.size() && path.ends_with(suffix)) {
    std::string plain = path.substr(0, path.size() - suffix.size());
    if (std::filesystem::is_regular_file(plain, ec)) return plain;
  }
  return Status::NotFound("Fashion-MNIST file not found: " + path + Hint());
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `n` bytes; fails on a short read or a zlib error.
Status ReadExact(gzFile f, const std::string& path, void* dst, size_t n, const char* what) {
  auto* out = static_cast<unsigned char*>(dst);
  size_t done = 0;
  while (done < n) {
    const size_t chunk = std::min<size_t>(n - done, 1u << 30);
    const int got = gzread(f, out + done, static_cast<unsigned>(chunk));
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      return Corrupt(path, std::string("zlib error while reading ") + what + ": " + msg);
    }
    if (got == 0) {
      return Corrupt(path, std::string("truncated ") + what + " (" + std::to_string(done) + " of " +
                               std::to_string(n) + " bytes)");
    }
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Opens an IDX file, checks the magic and reads `dims` dimensions.
Result<GzFile> OpenIdx(const std::string& path, uint32_t magic, int ndims,
                       std::vector<uint32_t>* dims) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return Status::IoError("cannot open Fashion-MNIST file " + path + Hint());
  std::vector<unsigned char> header(4 * (1 + static_cast<size_t>(ndims)));
  Status s = ReadExact(f.get(), path, header.data(), header.size(), "IDX header");
  if (!s.ok()) return s;
  const uint32_t got_magic = BigEndian32(header.data());
  if (got_magic != magic) {
    return Corrupt(path, "bad IDX magic " + Hex(got_magic) + " (expected " + Hex(magic) + ")");
  }
  dims->clear();
  for (int i = 0; i < ndims; ++i) dims->push_back(BigEndian32(header.data() + 4 * (1 + i)));
  return f;
}

Status ExpectEnd(gzFile f, const std::string& path) {
  unsigned char extra;
  const int got = gzread(f, &extra, 1);
  if (got < 0) {
    int errnum = 0;
    return Corrupt(path, std::string("zlib error at end of data: ") + gzerror(f, &errnum));
  }
  if (got != 0) return Corrupt(path, "trailing bytes after the last example");
  return Status::Ok();
}

}  // namespace

std::string DefaultDataDir() {
  const char* env = std::getenv("SERENE_DATA_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultDataDir;
}

Result<Dataset> ReadIdxPair(const std::string& images_path, const std::string& labels_path,
                            size_t expected_size) {
  Result<std::string> images_file = Locate(images_path);
  if (!images_file.ok()) return images_file.status();
  Result<std::string> labels_file = Locate(labels_path);
  if (!labels_file.ok()) return labels_file.status();

  Dataset data;
  std::vector<uint32_t> dims;
  {
    Result<GzFile> f = OpenIdx(*images_file, kIdxImagesMagic, 3, &dims);
    if (!f.ok()) return f.status();
    if (dims[1] != kRows || dims[2] != kCols) {
      return Corrupt(*images_file, "images are " + std::to_string(dims[1]) + "x" +
                                       std::to_string(dims[2]) + ", expected 28x28");
    }
    if (expected_size != 0 && dims[0] != expected_size) {
      return Corrupt(*images_file, std::to_string(dims[0]) + " images, expected " +
                                       std::to_string(expected_size));
    }
    data.size = dims[0];
    data.rows = kRows;
    data.cols = kCols;
    data.pixels.resize(data.size * data.image_size());
    Status s = ReadExact(f->get(), *images_file, data.pixels.data(), data.pixels.size(), "pixels");
    if (s.ok()) s = ExpectEnd(f->get(), *images_file);
    if (!s.ok()) return s;
  }
  {
    Result<GzFile> f = OpenIdx(*labels_file, kIdxLabelsMagic, 1, &dims);
    if (!f.ok()) return f.status();
    if (dims[0] != data.size) {
      return Corrupt(*labels_file, std::to_string(dims[0]) + " labels for " +
                                       std::to_string(data.size) + " images in " + *images_file);
    }
    data.labels.resize(data.size);
    Status s = ReadExact(f->get(), *labels_file, data.labels.data(), data.labels.size(), "labels");
    if (s.ok()) s = ExpectEnd(f->get(), *labels_file);
    if (!s.ok()) return s;
    for (size_t i = 0; i < data.size; ++i) {
      if (data.labels[i] >= kNumClasses) {
        return Corrupt(*labels_file, "label " + std::to_string(data.labels[i]) + " at index " +
                                         std::to_string(i) + " is not in 0..9");
      }
    }
  }
  return data;
}

Result<Dataset> LoadFashionMnist(const std::string& dir, Split split) {
  const std::string prefix = (split == Split::kTrain) ? "train" : "t10k";
  const size_t expected = (split == Split::kTrain) ? kTrainSize : kTestSize;
  const std::filesystem::path base(dir);
  return ReadIdxPair((base / (prefix + "-images-idx3-ubyte.gz")).string(),
                     (base / (prefix + "-labels-idx1-ubyte.gz")).string(), expected);
}

void NormalizePixels(std::span<const uint8_t> src, std::span<float> dst) {
  constexpr float kScale = 1.0f / (255.0f * kPixelStd);
  constexpr float kShift = kPixelMean / kPixelStd;
  for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(src[i]) * kScale - kShift;
}

}  // namespace serene::train
