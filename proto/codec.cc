#include "proto/codec.h"

#include "proto/values.h"

namespace serene::proto {

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kJoin: return "JOIN";
    case Op::kJoinAck: return "JOIN_ACK";
    case Op::kRead: return "READ";
    case Op::kReadReply: return "READ_REPLY";
    case Op::kInc: return "INC";
    case Op::kClock: return "CLOCK";
    case Op::kRelease: return "RELEASE";
    case Op::kNack: return "NACK";
    case Op::kLeave: return "LEAVE";
    case Op::kError: return "ERROR";
    case Op::kCookie: return "COOKIE";
  }
  return "UNKNOWN";
}

std::string_view ErrorName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRank: return "bad_rank";
    case ErrorCode::kBadRow: return "bad_row";
    case ErrorCode::kBadRowCount: return "bad_row_count";
    case ErrorCode::kBadClock: return "bad_clock";
    case ErrorCode::kNotJoined: return "not_joined";
    case ErrorCode::kWrongSource: return "wrong_source";
    case ErrorCode::kEvicted: return "evicted";
    case ErrorCode::kBadCount: return "bad_count";
    case ErrorCode::kNotReleased: return "not_released";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kRankInUse: return "rank_in_use";
  }
  return "unknown";
}

std::string_view ParseErrorName(ParseError e) {
  switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kTruncated: return "truncated";
    case ParseError::kBadMagic: return "bad_magic";
    case ParseError::kBadVersion: return "bad_version";
    case ParseError::kBadOp: return "bad_op";
    case ParseError::kLengthMismatch: return "length_mismatch";
  }
  return "unknown";
}

ParseError Decode(const uint8_t* data, size_t len, PacketView* out) {
  if (len < kHeaderSize) return ParseError::kTruncated;
  if (LoadU16(data + kOffMagic) != kMagic) return ParseError::kBadMagic;
  if (data[kOffVersion] != kVersion) return ParseError::kBadVersion;
  const uint8_t op = data[kOffOp];
  if (op < kMinOp || op > kMaxOp) return ParseError::kBadOp;
  const uint16_t count = LoadU16(data + kOffCount);
  if (len != PacketSize(count)) return ParseError::kLengthMismatch;

  Header& h = out->header;
  h.op = static_cast<Op>(op);
  h.job = LoadU16(data + kOffJob);
  h.worker = LoadU16(data + kOffWorker);
  h.key = LoadU32(data + kOffKey);
  h.clock = LoadU32(data + kOffClock);
  h.row = LoadU32(data + kOffRow);
  h.count = count;
  h.flags = LoadU16(data + kOffFlags);
  out->values = data + kHeaderSize;
  return ParseError::kOk;
}

void EncodeHeader(const Header& h, uint8_t* buf) {
  StoreU16(buf + kOffMagic, kMagic);
  buf[kOffVersion] = kVersion;
  buf[kOffOp] = static_cast<uint8_t>(h.op);
  StoreU16(buf + kOffJob, h.job);
  StoreU16(buf + kOffWorker, h.worker);
  StoreU32(buf + kOffKey, h.key);
  StoreU32(buf + kOffClock, h.clock);
  StoreU32(buf + kOffRow, h.row);
  StoreU16(buf + kOffCount, h.count);
  StoreU16(buf + kOffFlags, h.flags);
}

size_t Encode(Header h, std::span<const int32_t> values, uint8_t* buf) {
  h.count = static_cast<uint16_t>(values.size());
  EncodeHeader(h, buf);
  StoreValues(values, buf + kHeaderSize);
  return PacketSize(values.size());
}

}  // namespace serene::proto
