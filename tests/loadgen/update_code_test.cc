// UpdateCode (loadgen/update_code.h): a model built from a known set of
// (rank, clock) updates passes the check exactly when the set is what the
// barrier allows; an update lost, applied twice, or from outside the window
// is caught and named.
#include "loadgen/update_code.h"

#include <gtest/gtest.h>

#include <vector>

namespace serene::loadgen {
namespace {

constexpr uint32_t kWorkers = 3;
constexpr uint64_t kElements = 100;  // rows of 16: the last row and groups cut short
constexpr uint32_t kRow = 16;
constexpr uint32_t kClocks = 20;

// The seed plus, for each rank w, its updates of clocks 1..held[w].
std::vector<int32_t> Model(const UpdateCode& code, const std::vector<uint32_t>& held) {
  std::vector<int32_t> model(kElements), u(kElements);
  for (size_t i = 0; i < kElements; ++i) model[i] = UpdateCode::Seed(i);
  for (uint32_t w = 0; w < kWorkers; ++w) {
    for (uint32_t c = 1; c <= held[w]; ++c) {
      code.Update(w, c, u);
      for (size_t i = 0; i < kElements; ++i) model[i] += u[i];
    }
  }
  return model;
}

void Add(const UpdateCode& code, uint32_t rank, uint32_t clock, int sign,
         std::vector<int32_t>* model) {
  std::vector<int32_t> u(kElements);
  code.Update(rank, clock, u);
  for (size_t i = 0; i < kElements; ++i) (*model)[i] += sign * u[i];
}

TEST(UpdateCode, EveryRankOwnsSomeOfEveryRowAndOnlyItsOwnerAddsThere) {
  UpdateCode code(kWorkers, kElements, kRow, kClocks);
  std::vector<int32_t> sum(kElements, 0), u(kElements);
  for (uint32_t w = 0; w < kWorkers; ++w) {
    code.Update(w, 5, u);
    size_t mine = 0;
    for (size_t i = 0; i < kElements; ++i) {
      if (u[i] == 0) continue;
      EXPECT_EQ(sum[i], 0) << "element " << i << " has two owners";
      sum[i] = u[i];
      ++mine;
    }
    EXPECT_GT(mine, 0u);
  }
}

TEST(UpdateCode, ExactPullsPassOnlyWithExactlyTheClocksBefore) {
  UpdateCode code(kWorkers, kElements, kRow, kClocks);
  const PullBounds at7 = code.Bounds(7, /*exact=*/true, 0);
  EXPECT_EQ(code.Check(Model(code, {6, 6, 6}), 0, at7), "");
  EXPECT_NE(code.Check(Model(code, {6, 6, 5}), 0, at7), "");  // one clock missing
  EXPECT_NE(code.Check(Model(code, {6, 7, 6}), 0, at7), "");  // one from the pull's clock
}

TEST(UpdateCode, AWindowAllowsAnythingBetweenItsBounds) {
  UpdateCode code(kWorkers, kElements, kRow, kClocks);
  const PullBounds at10 = code.Bounds(10, /*exact=*/false, 2);  // own 9, others 7..12
  EXPECT_EQ(at10.own, 9u);
  EXPECT_EQ(at10.lo, 7u);
  EXPECT_EQ(at10.hi, 12u);
  EXPECT_EQ(code.Check(Model(code, {9, 7, 12}), 0, at10), "");
  EXPECT_NE(code.Check(Model(code, {9, 6, 12}), 0, at10), "");  // a required clock missing
  EXPECT_NE(code.Check(Model(code, {9, 7, 13}), 0, at10), "");  // a forbidden one
  EXPECT_NE(code.Check(Model(code, {8, 7, 12}), 0, at10), "");  // the rank's own missing
  const PullBounds async = code.Bounds(10, /*exact=*/false, 0xFFFFFFFFu);
  EXPECT_EQ(code.Check(Model(code, {9, 0, 20}), 0, async), "");
}

TEST(UpdateCode, AnUpdateAppliedTwiceOrLostInTheMiddleIsCaught) {
  UpdateCode code(kWorkers, kElements, kRow, kClocks);
  const PullBounds any = code.Bounds(10, /*exact=*/false, 0xFFFFFFFFu);
  std::vector<int32_t> twice = Model(code, {9, 5, 5});
  Add(code, 1, 3, +1, &twice);
  EXPECT_NE(code.Check(twice, 0, any), "") << "clock 3 of rank 1 twice";
  std::vector<int32_t> hole = Model(code, {9, 5, 5});
  Add(code, 2, 2, -1, &hole);
  EXPECT_NE(code.Check(hole, 0, any), "") << "clock 2 of rank 2 missing";
  // Lost and doubled in one (same count, other clocks): the sums tell.
  std::vector<int32_t> swapped = Model(code, {9, 5, 5});
  Add(code, 1, 2, -1, &swapped);
  Add(code, 1, 4, +1, &swapped);
  EXPECT_NE(code.Check(swapped, 0, any), "");
  std::vector<int32_t> no_seed = Model(code, {9, 5, 5});
  no_seed[40] -= UpdateCode::Seed(40);
  no_seed[41] -= UpdateCode::Seed(41);
  EXPECT_NE(code.Check(no_seed, 0, any), "");
}

}  // namespace
}  // namespace serene::loadgen
