#include "proto/codec.h"

#include <gtest/gtest.h>

#include <vector>

namespace serene::proto {
namespace {

TEST(Codec, EncodeDecodeRoundTripIsBigEndian) {
  Header h;
  h.op = Op::kInc;
  h.job = 0x0102;
  h.worker = 0x0304;
  h.key = 0x05060708;
  h.clock = 0x090A0B0C;
  h.row = 0x0D0E0F10;
  h.flags = 0x1112;
  const std::vector<int32_t> values = {1, -1, INT32_MIN, INT32_MAX};
  std::vector<uint8_t> buf(PacketSize(values.size()));
  ASSERT_EQ(Encode(h, values, buf.data()), buf.size());
  const std::vector<uint8_t> header_bytes = {0x53, 0x45, 1,    5,    0x01, 0x02, 0x03, 0x04,
                                             0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C,
                                             0x0D, 0x0E, 0x0F, 0x10, 0x00, 0x04, 0x11, 0x12};
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + kHeaderSize), header_bytes);
  EXPECT_EQ(std::vector<uint8_t>(buf.begin() + 24, buf.begin() + 28),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(std::vector<uint8_t>(buf.begin() + 28, buf.begin() + 32),
            (std::vector<uint8_t>{0xFF, 0xFF, 0xFF, 0xFF}));

  PacketView v;
  ASSERT_EQ(Decode(buf.data(), buf.size(), &v), ParseError::kOk);
  EXPECT_EQ(v.header.op, Op::kInc);
  EXPECT_EQ(v.header.job, 0x0102);
  EXPECT_EQ(v.header.worker, 0x0304);
  EXPECT_EQ(v.header.key, 0x05060708u);
  EXPECT_EQ(v.header.clock, 0x090A0B0Cu);
  EXPECT_EQ(v.header.row, 0x0D0E0F10u);
  EXPECT_EQ(v.header.count, 4);
  EXPECT_EQ(v.header.flags, 0x1112);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(v.Value(i), values[i]);
}

TEST(Codec, RejectsInOrderOfChecks) {
  std::vector<uint8_t> buf(PacketSize(2));
  Header h;
  h.op = Op::kRead;
  const int32_t vals[2] = {1, 2};
  Encode(h, vals, buf.data());
  PacketView v;
  EXPECT_EQ(Decode(buf.data(), 23, &v), ParseError::kTruncated);
  EXPECT_EQ(Decode(buf.data(), buf.size() - 1, &v), ParseError::kLengthMismatch);
  auto bad = buf;
  bad[1] = 0;
  EXPECT_EQ(Decode(bad.data(), bad.size(), &v), ParseError::kBadMagic);
  bad = buf;
  bad[2] = 0;
  EXPECT_EQ(Decode(bad.data(), bad.size(), &v), ParseError::kBadVersion);
  for (uint8_t op : {uint8_t{0}, uint8_t{12}, uint8_t{255}}) {
    bad = buf;
    bad[3] = op;
    EXPECT_EQ(Decode(bad.data(), bad.size(), &v), ParseError::kBadOp);
  }
  bad = buf;
  bad.push_back(0);
  EXPECT_EQ(Decode(bad.data(), bad.size(), &v), ParseError::kLengthMismatch);
}

TEST(Codec, ClockArithmeticWrapsModulo32Bits) {
  EXPECT_EQ(ClockDiff(0, kNoClock), 1);
  EXPECT_EQ(ClockDiff(kNoClock, 0), -1);
  EXPECT_EQ(ClockDiff(5, 0xFFFFFFFEu), 7);
  EXPECT_EQ(ClockDiff(10, 3), 7);
}

TEST(Codec, NamesAreStable) {
  EXPECT_EQ(OpName(Op::kRelease), "RELEASE");
  EXPECT_EQ(ErrorName(ErrorCode::kBadRow), "bad_row");
  EXPECT_EQ(ErrorName(ErrorCode::kRankInUse), "rank_in_use");
  EXPECT_EQ(static_cast<int32_t>(ErrorCode::kRankInUse), 11) << "a wire value: never renumber";
  EXPECT_EQ(ParseErrorName(ParseError::kLengthMismatch), "length_mismatch");
  EXPECT_EQ(kMaxValues, 16370u);
}

}  // namespace
}  // namespace serene::proto
