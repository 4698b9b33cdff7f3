#include "train/fashion_mnist.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

using testing::ScratchDir;

std::vector<unsigned char> Header(uint32_t magic, std::vector<uint32_t> dims) {
  std::vector<unsigned char> out;
  auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<unsigned char>(v >> shift));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  return out;
}

void WriteGz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

// A valid pair of n 28x28 images and labels (label i % 10).
void WriteValidPair(const std::string& images, const std::string& labels, uint32_t n) {
  std::vector<unsigned char> img = Header(kIdxImagesMagic, {n, 28, 28});
  img.resize(img.size() + n * 784, 7);
  WriteGz(images, img);
  std::vector<unsigned char> lab = Header(kIdxLabelsMagic, {n});
  for (uint32_t i = 0; i < n; ++i) lab.push_back(static_cast<unsigned char>(i % 10));
  WriteGz(labels, lab);
}

TEST(FashionMnistTest, TrainingSetHasTheExpectedShape) {
  const Dataset& d = testing::TrainSet();
  EXPECT_EQ(d.size, 60000u);
  EXPECT_EQ(d.rows, 28);
  EXPECT_EQ(d.cols, 28);
  EXPECT_EQ(d.pixels.size(), 60000u * 784u);
  ASSERT_EQ(d.labels.size(), 60000u);
  std::array<int, kNumClasses> per_class{};
  for (uint8_t l : d.labels) {
    ASSERT_LT(l, kNumClasses);
    ++per_class[l];
  }
  for (int c : per_class) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
  EXPECT_GT(*std::max_element(d.pixels.begin(), d.pixels.end()), 200);
}

TEST(FashionMnistTest, TestSetHasTheExpectedShape) {
  const Dataset& d = testing::TestSet();
  EXPECT_EQ(d.size, 10000u);
  EXPECT_EQ(d.image_size(), 784u);
  std::array<int, kNumClasses> per_class{};
  for (uint8_t l : d.labels) {
    ASSERT_LT(l, kNumClasses);
    ++per_class[l];
  }
  for (int c : per_class) EXPECT_EQ(c, 1000);
}

TEST(FashionMnistTest, NormalizationCentersThePixels) {
  const Dataset& d = testing::TestSet();
  std::vector<float> x(d.pixels.size());
  NormalizePixels(d.pixels, x);
  double sum = 0, sq = 0;
  for (float v : x) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  const double mean = sum / static_cast<double>(x.size());
  const double var = sq / static_cast<double>(x.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.1);
}

TEST(FashionMnistTest, MissingDirectoryNamesPathAndPackage) {
  ScratchDir dir;
  Result<Dataset> r = LoadFashionMnist(dir.Sub("nowhere"), Split::kTest);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("dataset-fashion-mnist"), std::string::npos);
  EXPECT_NE(r.status().message().find(dir.Sub("nowhere/t10k-images-idx3-ubyte.gz")),
            std::string::npos)
      << r.status().message();
}

TEST(FashionMnistTest, DefaultDataDirHonoursTheEnvironment) {
  ASSERT_EQ(setenv("SERENE_DATA_DIR", "/some/where", 1), 0);
  EXPECT_EQ(DefaultDataDir(), "/some/where");
  ASSERT_EQ(unsetenv("SERENE_DATA_DIR"), 0);
  EXPECT_EQ(DefaultDataDir(), kDefaultDataDir);
}

TEST(FashionMnistTest, ReadsAValidPairAndUncompressedFiles) {
  ScratchDir dir;
  WriteValidPair(dir.Sub("i.gz"), dir.Sub("l.gz"), 12);
  Result<Dataset> r = ReadIdxPair(dir.Sub("i.gz"), dir.Sub("l.gz"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size, 12u);
  EXPECT_EQ(r->labels[11], 1);

  // A plain IDX file is found under its .gz name's twin.
  std::vector<unsigned char> lab = Header(kIdxLabelsMagic, {12});
  for (int i = 0; i < 12; ++i) lab.push_back(3);
  std::ofstream(dir.Sub("plain"), std::ios::binary)
      .write(reinterpret_cast<const char*>(lab.data()), static_cast<std::streamsize>(lab.size()));
  r = ReadIdxPair(dir.Sub("i.gz"), dir.Sub("plain.gz"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels[0], 3);
}

struct CorruptCase {
  const char* name;
  std::vector<unsigned char> images;
  std::vector<unsigned char> labels;
  const char* expected;  // substring of the message
};

std::vector<unsigned char> Concat(std::vector<unsigned char> a, size_t extra, unsigned char v) {
  a.resize(a.size() + extra, v);
  return a;
}

TEST(FashionMnistTest, CorruptFilesGiveAClearError) {
  const std::vector<unsigned char> good_labels = Concat(Header(kIdxLabelsMagic, {2}), 2, 1);
  const std::vector<CorruptCase> cases = {
      {"bad image magic", Concat(Header(0x00000801, {2, 28, 28}), 2 * 784, 0), good_labels,
       "bad IDX magic 0x00000801 (expected 0x00000803)"},
      {"wrong geometry", Concat(Header(kIdxImagesMagic, {2, 32, 32}), 2 * 1024, 0), good_labels,
       "32x32"},
      {"truncated pixels", Concat(Header(kIdxImagesMagic, {2, 28, 28}), 784, 0), good_labels,
       "truncated pixels"},
      {"trailing bytes", Concat(Header(kIdxImagesMagic, {2, 28, 28}), 2 * 784 + 1, 0), good_labels,
       "trailing bytes"},
      {"count mismatch", Concat(Header(kIdxImagesMagic, {2, 28, 28}), 2 * 784, 0),
       Concat(Header(kIdxLabelsMagic, {3}), 3, 1), "3 labels for 2 images"},
      {"label out of range", Concat(Header(kIdxImagesMagic, {2, 28, 28}), 2 * 784, 0),
       Concat(Header(kIdxLabelsMagic, {2}), 2, 10), "label 10"},
      {"short header", {0, 0, 8}, good_labels, "truncated IDX header"},
  };
  for (const CorruptCase& c : cases) {
    SCOPED_TRACE(c.name);
    ScratchDir dir;
    WriteGz(dir.Sub("i.gz"), c.images);
    WriteGz(dir.Sub("l.gz"), c.labels);
    Result<Dataset> r = ReadIdxPair(dir.Sub("i.gz"), dir.Sub("l.gz"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kIoError);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dir.path().string()), std::string::npos) << msg;
  }
}

TEST(FashionMnistTest, NotGzipNorIdxIsCorrupt) {
  ScratchDir dir;
  std::ofstream(dir.Sub("i.gz")) << "this is not an IDX file at all";
  WriteValidPair(dir.Sub("x.gz"), dir.Sub("l.gz"), 2);
  Result<Dataset> r = ReadIdxPair(dir.Sub("i.gz"), dir.Sub("l.gz"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad IDX magic"), std::string::npos) << r.status().message();
}

TEST(FashionMnistTest, ExpectedSizeIsEnforced) {
  ScratchDir dir;
  WriteValidPair(dir.Sub("i.gz"), dir.Sub("l.gz"), 5);
  Result<Dataset> r = ReadIdxPair(dir.Sub("i.gz"), dir.Sub("l.gz"), 60000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("5 images, expected 60000"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace serene::train
