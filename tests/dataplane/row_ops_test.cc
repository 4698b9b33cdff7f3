// Row kernels against a scalar reference, over lengths that cover the vector
// loops' tails and values at the int32 limits.
#include "dataplane/row_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <vector>

#include "proto/codec.h"

namespace serene::dataplane {
namespace {

int64_t Clamp(int64_t v) { return std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)); }

std::vector<int32_t> Values(std::mt19937& rng, uint32_t n) {
  const int32_t edges[] = {INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 0, -1, 1};
  std::vector<int32_t> v(n);
  for (auto& x : v) {
    x = rng() % 4 == 0 ? edges[rng() % 7] : static_cast<int32_t>(rng());
  }
  return v;
}

TEST(RowOps, MatchTheScalarReference) {
  std::mt19937 rng(5);
  for (uint32_t n = 0; n < 70; ++n) {
    const auto a = Values(rng, n), b = Values(rng, n);
    std::vector<int32_t> want(n);
    uint32_t want_clamps = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t s = int64_t{a[i]} + b[i];
      want[i] = static_cast<int32_t>(Clamp(s));
      want_clamps += Clamp(s) != s;
    }
    auto sum = a;
    EXPECT_EQ(AddRowSaturating(sum.data(), b.data(), n), want_clamps) << n;
    EXPECT_EQ(sum, want) << n;

    std::vector<uint8_t> be(4 * size_t{n});
    for (uint32_t i = 0; i < n; ++i) proto::StoreI32(be.data() + 4 * i, b[i]);
    sum = a;
    EXPECT_EQ(AddRowFromBigEndian(sum.data(), be.data(), n), want_clamps) << n;
    EXPECT_EQ(sum, want) << n;

    std::vector<uint8_t> out(4 * size_t{n}, 0xAB);
    StoreRowSumBigEndian(out.data(), a.data(), b.data(), n);
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(proto::LoadI32(out.data() + 4 * i), want[i]);

    // The fold-and-reply writes the same reply and leaves the wrapping sum,
    // which SubtractRow undoes (the saturating one when nothing clamped).
    std::fill(out.begin(), out.end(), 0xAB);
    sum = a;
    EXPECT_EQ(FoldRowStoreBigEndian(out.data(), sum.data(), b.data(), n), want_clamps) << n;
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(proto::LoadI32(out.data() + 4 * i), want[i]) << n << "/" << i;
      const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[i]));
      EXPECT_EQ(sum[i], wrapped) << n << "/" << i;
    }
    if (want_clamps == 0) {
      EXPECT_EQ(sum, want) << n;
    }
    SubtractRow(sum.data(), b.data(), n);
    EXPECT_EQ(sum, a) << n;

    // The difference undoes a sum that did not clamp (and wraps otherwise).
    std::fill(out.begin(), out.end(), 0xAB);
    StoreRowDifferenceBigEndian(out.data(), a.data(), b.data(), n);
    for (uint32_t i = 0; i < n; ++i) {
      const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(a[i]) - static_cast<uint32_t>(b[i]));
      EXPECT_EQ(proto::LoadI32(out.data() + 4 * i), wrapped) << n << "/" << i;
    }
  }
}

}  // namespace
}  // namespace serene::dataplane
