// EarlyRows: where rows that came before their pull land, which are kept,
// and which are refused.
#include "client/early_rows.h"

#include <gtest/gtest.h>

#include <vector>

namespace serene::client {
namespace {

constexpr uint16_t kExactGroup = proto::flags::kExact | proto::flags::kGroup;

// A job of 10 values in rows of 4: rows 0, 1 and a short row 2 of 2.
JobInfo Job() {
  JobInfo info;
  info.workers = 2;
  info.elements = 10;
  info.row_width = 4;
  info.rows = 3;
  return info;
}

// An encoded READ_REPLY of `row` at `clock` whose values are all `value`.
struct Reply {
  Reply(uint32_t row, uint32_t clock, int32_t value, uint16_t flags = kExactGroup,
        size_t count = 0) {
    proto::Header h;
    h.op = proto::Op::kReadReply;
    h.row = row;
    h.clock = clock;
    h.flags = flags;
    h.worker = 0xFFFF;
    const std::vector<int32_t> values(count != 0 ? count : (row == 2 ? 2 : 4), value);
    bytes.resize(proto::PacketSize(values.size()));
    proto::Encode(h, values, bytes.data());
    EXPECT_EQ(proto::Decode(bytes.data(), bytes.size(), &view), proto::ParseError::kOk);
  }
  std::vector<uint8_t> bytes;
  proto::PacketView view;
};

TEST(EarlyRows, RowsLandInTheAreaInPlace) {
  EarlyRows early;
  early.Reset(Job(), true);
  std::vector<int32_t> area(10, -1);
  early.LandIn(area);
  ASSERT_TRUE(early.Offer(Reply(1, 5, 7).view));
  ASSERT_TRUE(early.Offer(Reply(2, 5, 9).view));
  EXPECT_EQ(area, (std::vector<int32_t>{-1, -1, -1, -1, 7, 7, 7, 7, 9, 9}));
  EXPECT_TRUE(early.Has(1, 5));
  EXPECT_FALSE(early.Has(1, 6));
  EXPECT_FALSE(early.Has(0, 5));
  EXPECT_EQ(early.Row(1).data(), area.data() + 4) << "a kept row is the area itself";
  EXPECT_EQ(early.Row(2).size(), 2u);
}

TEST(EarlyRows, RefusesWhatIsNotAnExactGroupRowOfTheJob) {
  EarlyRows early;
  early.Reset(Job(), true);
  std::vector<int32_t> area(10, 0);
  early.LandIn(area);
  EXPECT_FALSE(early.Offer(Reply(0, 5, 1, proto::flags::kGroup).view)) << "not exact";
  EXPECT_FALSE(early.Offer(Reply(0, 5, 1, proto::flags::kExact).view)) << "not a group row";
  EXPECT_FALSE(early.Offer(Reply(3, 5, 1).view)) << "no such row";
  EXPECT_FALSE(early.Offer(Reply(2, 5, 1, kExactGroup, 4).view)) << "the short row is 2 long";
  EXPECT_FALSE(early.Offer(Reply(0, 0xFFFFFFFFu, 1).view)) << "no clock";
  EXPECT_EQ(area, std::vector<int32_t>(10, 0)) << "a refused row writes nothing";
}

TEST(EarlyRows, NeverTakesAnOlderRowNorOneBelowTheFloor) {
  EarlyRows early;
  early.Reset(Job(), true);
  std::vector<int32_t> area(10, 0);
  early.LandIn(area);
  early.SetFloor(5);
  EXPECT_FALSE(early.Offer(Reply(0, 4, 1).view)) << "below the rank's clock: a late duplicate";
  ASSERT_TRUE(early.Offer(Reply(0, 5, 2).view));
  ASSERT_TRUE(early.Offer(Reply(0, 6, 3).view)) << "a newer clock's row replaces it";
  EXPECT_FALSE(early.Offer(Reply(0, 5, 2).view)) << "an older one never does";
  EXPECT_FALSE(early.Offer(Reply(0, 6, 4).view)) << "nor a second copy";
  EXPECT_TRUE(early.Has(0, 6));
  EXPECT_EQ(area[0], 3);
}

TEST(EarlyRows, ANewAreaForgetsTheRowsKeptInTheOldOne) {
  EarlyRows early;
  early.Reset(Job(), true);
  std::vector<int32_t> a(10, 0), b(10, 0);
  early.LandIn(a);
  ASSERT_TRUE(early.Offer(Reply(0, 5, 2).view));
  early.LandIn(a);
  EXPECT_TRUE(early.Has(0, 5)) << "the same area keeps its rows";
  early.LandIn(b);
  EXPECT_FALSE(early.Has(0, 5));
  ASSERT_TRUE(early.Offer(Reply(0, 5, 2).view));
  EXPECT_EQ(b[0], 2);
  early.Reset(Job(), true);
  EXPECT_FALSE(early.Has(0, 5)) << "a new JOIN forgets every row";
  EXPECT_FALSE(early.Offer(Reply(0, 5, 2).view)) << "and lands nothing until given an area";
}

TEST(EarlyRows, KeepsNothingWithoutTheGroup) {
  EarlyRows early;
  early.Reset(Job(), false);
  std::vector<int32_t> area(10, 0);
  early.LandIn(area);
  EXPECT_FALSE(early.Offer(Reply(0, 5, 2).view));
  std::vector<int32_t> small(4, 0);
  early.Reset(Job(), true);
  early.LandIn(small);
  EXPECT_FALSE(early.Offer(Reply(0, 5, 2).view)) << "an area of the wrong size lands nothing";
}

}  // namespace
}  // namespace serene::client
