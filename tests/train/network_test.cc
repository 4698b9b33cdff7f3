#include "train/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

Batch FirstExamples(const Dataset& d, size_t n) {
  Batch b;
  b.size = n;
  b.image_size = d.image_size();
  b.images.resize(n * b.image_size);
  NormalizePixels({d.pixels.data(), n * b.image_size}, b.images);
  for (size_t i = 0; i < n; ++i) {
    b.labels.push_back(d.labels[i]);
    b.indices.push_back(static_cast<uint32_t>(i));
  }
  return b;
}

class NetworkTest : public ::testing::TestWithParam<ModelKind> {};

// The analytic gradient with respect to the flat vector matches central finite
// differences on the largest-gradient coordinates of every parameter tensor:
// the forward pass reads each flat offset where the layout says it is.
TEST_P(NetworkTest, GradientMatchesFiniteDifferences) {
  const ModelKind kind = GetParam();
  auto net = Network::Create(kind);
  ASSERT_TRUE(net.ok());
  std::vector<float> params = InitialParameters(kind, 3);
  const Batch batch = FirstExamples(testing::TestSet(), 8);
  std::vector<float> grad(params.size());
  Result<float> loss = (*net)->Gradient(params, batch, grad);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  EXPECT_NEAR(*loss, std::log(10.0), 0.5);

  // Float32 central differences are noisy for tiny gradients and ReLU/max-pool
  // kinks; so each coordinate gets a loose bound and the tested coordinates
  // together a tight one (relative error of the whole vector).
  std::vector<float> scratch(params.size());
  constexpr float kEps = 1e-3f;
  double err2 = 0, norm2 = 0;
  for (const ParamSpec& p : ModelLayout(kind)) {
    std::vector<size_t> idx(p.size);
    std::iota(idx.begin(), idx.end(), p.offset);
    const size_t k = std::min<size_t>(4, p.size);
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                      [&](size_t a, size_t b) { return std::abs(grad[a]) > std::abs(grad[b]); });
    for (size_t j = 0; j < k; ++j) {
      const size_t i = idx[j];
      std::vector<float> plus = params, minus = params;
      plus[i] += kEps;
      minus[i] -= kEps;
      Result<float> lp = (*net)->Gradient(plus, batch, scratch);
      Result<float> lm = (*net)->Gradient(minus, batch, scratch);
      ASSERT_TRUE(lp.ok() && lm.ok());
      const double fd = (static_cast<double>(*lp) - *lm) / (2.0 * kEps);
      EXPECT_NEAR(fd, grad[i], 0.1 * std::abs(grad[i]) + 1e-3)
          << p.name << " element " << i - p.offset;
      err2 += (fd - grad[i]) * (fd - grad[i]);
      norm2 += static_cast<double>(grad[i]) * grad[i];
    }
  }
  EXPECT_LT(std::sqrt(err2 / norm2), 0.02);
}

TEST_P(NetworkTest, InitialModelIsAtChanceAndSgdLearns) {
  const ModelKind kind = GetParam();
  auto net = Network::Create(kind);
  ASSERT_TRUE(net.ok());
  EXPECT_EQ((*net)->parameter_count(), ParameterCount(kind));
  std::vector<float> params = InitialParameters(kind, 1);
  Result<EvalResult> before = (*net)->Evaluate(params, testing::TestSet(), 2000);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->samples, 2000u);
  EXPECT_LT(before->accuracy, 0.35);
  EXPECT_NEAR(before->loss, std::log(10.0), 0.5);

  // Plain SGD on the first 256 training examples lowers their loss. (The
  // LeNet starts on a plateau: it needs more steps than the MLP, and lr 0.1
  // is unstable on it.)
  const Batch batch = FirstExamples(testing::TrainSet(), 256);
  const int steps = kind == ModelKind::kMlp ? 40 : 80;
  const float lr = kind == ModelKind::kMlp ? 0.1f : 0.05f;
  std::vector<float> grad(params.size());
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    Result<float> loss = (*net)->Gradient(params, batch, grad);
    ASSERT_TRUE(loss.ok());
    if (step == 0) first = *loss;
    last = *loss;
    for (size_t i = 0; i < params.size(); ++i) params[i] -= lr * grad[i];
  }
  EXPECT_LT(last, 0.8f * first);
  Result<EvalResult> after = (*net)->Evaluate(params, testing::TestSet(), 2000);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->accuracy, before->accuracy + 0.15);
  std::printf("%s: loss %.4f -> %.4f, accuracy %.4f -> %.4f\n",
              std::string(ModelKindName(kind)).c_str(), first, last, before->accuracy,
              after->accuracy);
}

INSTANTIATE_TEST_SUITE_P(Models, NetworkTest, ::testing::Values(ModelKind::kMlp, ModelKind::kCnn),
                         [](const ::testing::TestParamInfo<ModelKind>& param_info) {
                           return std::string(ModelKindName(param_info.param));
                         });

TEST(NetworkErrorsTest, SizeMismatchesAreInvalidArgument) {
  auto net = Network::Create(ModelKind::kMlp);
  ASSERT_TRUE(net.ok());
  std::vector<float> wrong(10);
  std::vector<float> grad(ParameterCount(ModelKind::kMlp));
  const Batch batch = FirstExamples(testing::TestSet(), 2);
  EXPECT_EQ((*net)->Gradient(wrong, batch, grad).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ((*net)->Evaluate(wrong, testing::TestSet(), 10).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(NetworkErrorsTest, TorchErrorsBecomeStatus) {
  auto net = Network::Create(ModelKind::kMlp);
  ASSERT_TRUE(net.ok());
  std::vector<float> params = InitialParameters(ModelKind::kMlp, 1);
  std::vector<float> grad(params.size());
  Batch batch = FirstExamples(testing::TestSet(), 2);
  batch.labels[1] = 42;  // out of range for 10 classes: libtorch throws
  Result<float> r = (*net)->Gradient(params, batch, grad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInternal);
  EXPECT_NE(r.status().message().find("libtorch"), std::string::npos);
}

TEST(NetworkErrorsTest, ComputeThreadsAreValidated) {
  EXPECT_FALSE(SetComputeThreads(0).ok());
  EXPECT_TRUE(SetComputeThreads(1).ok());
}

}  // namespace
}  // namespace serene::train
