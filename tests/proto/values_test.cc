// Whole-row value conversion against the per-value codec (proto/values.h).
#include "proto/values.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "proto/codec.h"

namespace serene::proto {
namespace {

TEST(ValuesTest, StoreAndLoadMatchThePerValueCodecAtEveryLength) {
  // Lengths around the vector widths, including 0 and a short tail.
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 31u, 256u, 4097u}) {
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

}  // namespace
}  // namespace serene::proto
