// Whole-row value conversion against the per-value codec (proto/values.h).
#include "proto/values.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "proto/codec.h"

namespace serene::proto {
namespace {

TEST(ValuesTest, StoreAndLoadMatchThePerValueCodecAtEveryLength) {
  // Lengths around the vector widths (the kernels are vectorized: -O3, AVX2
  // clones), including 0 and short tails.
  for (size_t n : {0u, 1u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 33u, 256u, 362u, 4097u}) {
    std::vector<int32_t> values(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = static_cast<int32_t>(i * 2654435761u) ^ (i % 3 == 0 ? INT_MIN : 0);
    }
    std::vector<uint8_t> wire(4 * n + 1, 0xAB);  // one guard byte
    StoreValues(values, wire.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(LoadI32(wire.data() + 4 * i), values[i]) << n << "/" << i;
    EXPECT_EQ(wire[4 * n], 0xAB) << "wrote past the end";
    std::vector<int32_t> back(n + 1, 7);
    LoadValues(wire.data(), std::span<int32_t>(back.data(), n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], values[i]) << n << "/" << i;
    EXPECT_EQ(back[n], 7) << "wrote past the end";
  }
}

TEST(ValuesTest, StoreAndLoadWorkAtUnalignedAddresses) {
  // A datagram's values follow a 24-byte header in a receive buffer that may
  // sit anywhere: the kernels must not assume alignment.
  constexpr size_t kN = 100;
  std::vector<int32_t> values(kN);
  for (size_t i = 0; i < kN; ++i) values[i] = static_cast<int32_t>(i * 40503u) - 1000000;
  for (size_t offset = 1; offset < 4; ++offset) {
    std::vector<uint8_t> wire(4 * kN + offset);
    StoreValues(values, wire.data() + offset);
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(LoadI32(wire.data() + offset + 4 * i), values[i]) << offset << "/" << i;
    }
    std::vector<int32_t> back(kN);
    LoadValues(wire.data() + offset, back);
    EXPECT_EQ(back, values) << offset;
  }
}

}  // namespace
}  // namespace serene::proto
