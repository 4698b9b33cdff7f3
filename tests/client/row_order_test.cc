// The order a rank pulls and pushes its rows in (client/rank_state.h):
// every row exactly once, starting at rank * rows / workers.
#include <gtest/gtest.h>

#include <vector>

#include "client/rank_state.h"

namespace serene::client {
namespace {

TEST(RowOrder, RanksStartApartAndVisitEveryRowOnce) {
  JobInfo info;
  info.workers = 4;
  info.rows = 245;
  EXPECT_EQ(FirstRow(0, info), 0u);
  EXPECT_EQ(FirstRow(1, info), 61u);
  EXPECT_EQ(FirstRow(2, info), 122u);
  EXPECT_EQ(FirstRow(3, info), 183u);
  for (uint32_t rank = 0; rank < info.workers; ++rank) {
    std::vector<int> seen(info.rows, 0);
    const uint32_t first = FirstRow(rank, info);
    for (uint32_t i = 0; i < info.rows; ++i) ++seen[RowAt(first, i, info.rows)];
    EXPECT_EQ(seen, std::vector<int>(info.rows, 1)) << rank;
  }
}

TEST(RowOrder, FewRowsManyRanksAndRankOutOfRange) {
  JobInfo info;
  info.workers = 256;
  info.rows = 3;
  EXPECT_EQ(FirstRow(255, info), 2u);
  EXPECT_EQ(FirstRow(300, info), 0u);  // not a rank of the job: from row 0
  info.rows = 0xFFFFFFFFu;             // no overflow in rank * rows
  EXPECT_EQ(FirstRow(255, info), static_cast<uint32_t>(255ull * 0xFFFFFFFFull / 256));
}

}  // namespace
}  // namespace serene::client
