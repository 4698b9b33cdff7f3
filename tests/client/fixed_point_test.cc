// Fixed-point conversion: range errors and the documented error bound of a
// sum of N quantized vectors (docs/client.md).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "serene/client.h"

namespace serene {
namespace {

TEST(FixedPoint, RoundsToNearest) {
  std::vector<float> in = {0.0f, 1.0f, -1.0f, 0.5f / (1 << 24), 3.75f};
  std::vector<int32_t> out(in.size());
  ASSERT_TRUE(Quantize(in, 24, out).ok());
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1 << 24);
  EXPECT_EQ(out[2], -(1 << 24));
  EXPECT_EQ(std::abs(out[3]), 0);  // half an ulp rounds to even
  EXPECT_EQ(out[4], static_cast<int32_t>(3.75 * (1 << 24)));
  std::vector<float> back(in.size());
  Dequantize(out, 24, back);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[4], 3.75f);
}

TEST(FixedPoint, OutOfRangeAndNonFiniteAreErrorsNamingTheValue) {
  std::vector<int32_t> out(3);
  // At 2^24 the range is +-128.
  auto s = Quantize(std::vector<float>{1.0f, 200.0f, 0.0f}, 24, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("[1] = 200"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("+-128"), std::string::npos) << s.message();
  EXPECT_FALSE(Quantize(std::vector<float>{std::nanf("")}, 24, out).ok());
  EXPECT_FALSE(Quantize(std::vector<float>{-std::numeric_limits<float>::infinity()}, 24, out).ok());
  EXPECT_TRUE(Quantize(std::vector<float>{-128.0f}, 24, out).ok());
  EXPECT_EQ(out[0], INT32_MIN);
  EXPECT_FALSE(Quantize(std::vector<float>{128.0f}, 24, out).ok()) << "2^31 does not fit";
}

// The conversions are vectorized (-O3, AVX2 clones): every length around the
// vector widths matches the per-value definition, and a bad value anywhere,
// in a vector body or its tail, is found and named.
TEST(FixedPoint, EveryLengthMatchesThePerValueDefinitionAndABadValueIsFoundAnywhere) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (size_t n : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 33u, 100u}) {
    std::vector<float> in(n);
    for (float& v : in) v = dist(rng);
    std::vector<int32_t> q(n);
    ASSERT_TRUE(Quantize(in, 24, q).ok()) << n;
    std::vector<float> back(n);
    Dequantize(q, 24, back);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(q[i], static_cast<int32_t>(std::nearbyint(double{in[i]} * (1 << 24)))) << n << "/" << i;
      ASSERT_EQ(back[i], static_cast<float>(q[i] * std::ldexp(1.0, -24))) << n << "/" << i;
    }
    for (size_t bad : {size_t{0}, n / 2, n - 1}) {
      std::vector<float> with_bad = in;
      with_bad[bad] = bad % 2 ? std::numeric_limits<float>::infinity() : 1000.0f;
      auto s = Quantize(with_bad, 24, q);
      ASSERT_FALSE(s.ok()) << n << "/" << bad;
      EXPECT_NE(s.message().find("[" + std::to_string(bad) + "] = "), std::string::npos)
          << s.message();
    }
  }
}

// |dequantized(sum of quantized x_i) - sum x_i| <= N * 2^-(s+1) + ulp(result)/2.
TEST(FixedPoint, SumOfNQuantizedVectorsIsWithinTheBound) {
  for (uint32_t scale : {16u, 20u, 24u}) {
    for (int n : {2, 4, 8, 64}) {
      std::mt19937 rng(scale * 100 + n);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      constexpr size_t kLen = 4096;
      std::vector<int64_t> fixed_sum(kLen, 0);
      std::vector<double> exact_sum(kLen, 0.0);
      std::vector<int32_t> q(kLen);
      for (int w = 0; w < n; ++w) {
        std::vector<float> x(kLen);
        for (float& v : x) v = dist(rng) * 0.1f;
        ASSERT_TRUE(Quantize(x, scale, q).ok());
        for (size_t i = 0; i < kLen; ++i) {
          fixed_sum[i] += q[i];
          exact_sum[i] += x[i];
        }
      }
      std::vector<int32_t> s32(fixed_sum.begin(), fixed_sum.end());
      std::vector<float> result(kLen);
      Dequantize(s32, scale, result);
      const double bound_q = n * std::ldexp(1.0, -static_cast<int>(scale) - 1);
      double worst = 0;
      for (size_t i = 0; i < kLen; ++i) {
        const double bound = bound_q + std::abs(exact_sum[i]) * std::ldexp(1.0, -24);
        const double err = std::abs(double{result[i]} - exact_sum[i]);
        worst = std::max(worst, err / bound);
        ASSERT_LE(err, bound) << "scale 2^" << scale << " n=" << n << " i=" << i;
      }
      // The bound is tight enough to mean something: errors use a good part of it.
      EXPECT_GT(worst, 0.1) << "scale 2^" << scale << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace serene
