#include "train/model_layout.h"

#include <gtest/gtest.h>

#include <cmath>

namespace serene::train {
namespace {

TEST(ModelLayoutTest, ParameterCounts) {
  EXPECT_EQ(ParameterCount(ModelKind::kMlp), 79510u);  // 784*100+100 + 100*10+10
  // conv1 6*25+6, conv2 16*6*25+16, fc 400*120+120, 120*84+84, 84*10+10
  EXPECT_EQ(ParameterCount(ModelKind::kCnn), 61706u);
}

TEST(ModelLayoutTest, OffsetsAreContiguous) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn}) {
    size_t offset = 0;
    for (const ParamSpec& p : ModelLayout(kind)) {
      EXPECT_EQ(p.offset, offset) << p.name;
      size_t size = 1;
      for (int64_t d : p.shape) size *= static_cast<size_t>(d);
      EXPECT_EQ(p.size, size) << p.name;
      offset += p.size;
    }
    EXPECT_EQ(offset, ParameterCount(kind));
  }
  EXPECT_EQ(ModelLayout(ModelKind::kMlp)[0].name, "fc1.weight");
  EXPECT_EQ(ModelLayout(ModelKind::kMlp)[0].shape, (std::vector<int64_t>{100, 784}));
}

TEST(ModelLayoutTest, InitIsDeterministicPerSeed) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn}) {
    const std::vector<float> a = InitialParameters(kind, 42);
    const std::vector<float> b = InitialParameters(kind, 42);
    const std::vector<float> c = InitialParameters(kind, 43);
    ASSERT_EQ(a.size(), ParameterCount(kind));
    EXPECT_EQ(a, b);  // bit-identical
    EXPECT_NE(a, c);
  }
}

TEST(ModelLayoutTest, InitFollowsTheFanInBound) {
  const std::vector<float> w = InitialParameters(ModelKind::kCnn, 1);
  for (const ParamSpec& p : ModelLayout(ModelKind::kCnn)) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
    double sum = 0, max_abs = 0;
    for (size_t i = 0; i < p.size; ++i) {
      const double v = w[p.offset + i];
      max_abs = std::max(max_abs, std::abs(v));
      sum += v;
    }
    EXPECT_LE(max_abs, bound) << p.name;
    if (p.size >= 1000) {
      EXPECT_GT(max_abs, 0.95 * bound) << p.name;  // uses the whole range
      EXPECT_NEAR(sum / static_cast<double>(p.size), 0.0, 0.1 * bound) << p.name;
    }
  }
}

TEST(ModelLayoutTest, FlattenUnflattenRoundTrip) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn}) {
    const std::vector<float> flat = InitialParameters(kind, 9);
    auto named = Unflatten(kind, flat);
    ASSERT_TRUE(named.ok()) << named.status().ToString();
    EXPECT_EQ(named->size(), ModelLayout(kind).size());
    for (const ParamSpec& p : ModelLayout(kind)) {
      ASSERT_EQ(named->at(p.name).size(), p.size);
      EXPECT_EQ(named->at(p.name)[0], flat[p.offset]) << p.name;
    }
    auto back = Flatten(kind, *named);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, flat);
  }
}

TEST(ModelLayoutTest, FlattenAndUnflattenRejectMismatches) {
  const std::vector<float> flat = InitialParameters(ModelKind::kMlp, 1);
  EXPECT_FALSE(Unflatten(ModelKind::kCnn, flat).ok());
  auto named = Unflatten(ModelKind::kMlp, flat);
  ASSERT_TRUE(named.ok());
  auto missing = *named;
  missing.erase("fc2.bias");
  EXPECT_FALSE(Flatten(ModelKind::kMlp, missing).ok());
  auto renamed = missing;
  renamed["fc2.b"] = std::vector<float>(10);
  EXPECT_FALSE(Flatten(ModelKind::kMlp, renamed).ok());
  auto wrong_size = *named;
  wrong_size["fc2.bias"].push_back(0);
  Result<std::vector<float>> r = Flatten(ModelKind::kMlp, wrong_size);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fc2.bias"), std::string::npos);
}

TEST(ModelLayoutTest, ParsesModelNames) {
  EXPECT_EQ(*ParseModelKind("mlp"), ModelKind::kMlp);
  EXPECT_EQ(*ParseModelKind("cnn"), ModelKind::kCnn);
  Result<ModelKind> bad = ParseModelKind("resnet");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mlp or cnn"), std::string::npos);
}

}  // namespace
}  // namespace serene::train
