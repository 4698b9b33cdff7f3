// Serene wire format, version 1: layout, sizes and constants.
// See ../docs/protocol.md for the full description; this header is the only
// place that defines these numbers, every other component includes it.
//
// One UDP datagram carries one packet: a 24-byte header followed by `count`
// int32 values. Every field is big-endian (network order), like a switch
// parses it:
//
//   offset size field
//    0     2    magic    0x5345 ("SE")
//    2     1    version  1
//    3     1    op       Op
//    4     2    job      job id, 1..65535
//    6     2    worker   rank in the job, 0..N-1
//    8     4    key      per-job secret
//   12     4    clock    the worker's clock, compared modulo 2^32
//   16     4    row      READ/INC: row index; CLOCK: distinct rows INC'd
//   20     2    count    number of int32 values that follow
//   22     2    flags    Flag bits
//   24  4*count values   int32, two's complement
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace serene::proto {

inline constexpr uint16_t kMagic = 0x5345;
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 24;
inline constexpr size_t kValueSize = 4;

// The largest UDP payload over IPv4 is 65507 bytes; a packet never exceeds it.
inline constexpr size_t kMaxDatagram = 65507;
inline constexpr size_t kMaxValues = (kMaxDatagram - kHeaderSize) / kValueSize;  // 16370

// Field offsets, for encoders and for anyone writing another implementation.
inline constexpr size_t kOffMagic = 0;
inline constexpr size_t kOffVersion = 2;
inline constexpr size_t kOffOp = 3;
inline constexpr size_t kOffJob = 4;
inline constexpr size_t kOffWorker = 6;
inline constexpr size_t kOffKey = 8;
inline constexpr size_t kOffClock = 12;
inline constexpr size_t kOffRow = 16;
inline constexpr size_t kOffCount = 20;
inline constexpr size_t kOffFlags = 22;

enum class Op : uint8_t {
  kJoin = 1,
  kJoinAck = 2,
  kRead = 3,
  kReadReply = 4,
  kInc = 5,
  kClock = 6,
  kRelease = 7,
  kNack = 8,
  kLeave = 9,
  kError = 10,
  // The switch's answer to a request from an address it cannot vouch for
  // (docs/protocol.md, "Return routability"): header only, the cookie in
  // clock and row, the answered request's op in flags bits 8..15.
  kCookie = 11,
};
inline constexpr uint8_t kMinOp = 1;
inline constexpr uint8_t kMaxOp = 11;

// True for ops a worker sends (the switch only accepts these).
constexpr bool IsRequest(Op op) {
  return op == Op::kJoin || op == Op::kRead || op == Op::kInc || op == Op::kClock ||
         op == Op::kLeave;
}

std::string_view OpName(Op op);

// Flag bits (header field `flags`). Requests and replies use disjoint meanings
// of the same 16 bits only where noted; see docs/protocol.md.
namespace flags {
// Request: this packet is a retransmission (informational, counted).
inline constexpr uint16_t kRetransmit = 1u << 0;
// Reply: the job's table saturated at least once (an addition was clamped).
inline constexpr uint16_t kSaturated = 1u << 1;
// Reply: this rank was evicted; JOIN again to resume.
inline constexpr uint16_t kEvicted = 1u << 2;
// Reply: the job is finished (a rank ended it); stop training.
// Request (LEAVE only): finish the job for every rank.
inline constexpr uint16_t kFinished = 1u << 3;
// JOIN_ACK: the rank has completed `done` but is not yet released; re-send
// CLOCK(done) to learn when it is.
inline constexpr uint16_t kWaiting = 1u << 4;
// READ_REPLY: the row is exact (the window in force is 0, DESIGN.md §4).
inline constexpr uint16_t kExact = 1u << 5;
// READ: the rank receives the job's group (JOIN_ACK values 10-11): the switch
// may answer to the group, so every rank there gets the row at once.
// READ_REPLY: this reply was sent to the job's group.
inline constexpr uint16_t kGroup = 1u << 6;
}  // namespace flags

// ERROR reply codes (values[0] of an ERROR packet).
enum class ErrorCode : int32_t {
  kBadRank = 1,          // worker >= N
  kBadRow = 2,           // READ/INC row out of range
  kBadRowCount = 3,      // CLOCK announces more rows than the job has
  kBadClock = 4,         // CLOCK/READ for a clock that is neither current nor last completed
  kNotJoined = 5,        // rank has not sent JOIN yet
  kWrongSource = 6,      // rank joined from another address
  kEvicted = 7,          // rank was evicted; JOIN again
  kBadCount = 8,         // request carries values it must not carry
  kNotReleased = 9,      // READ while the rank waits for RELEASE
  kUnsupported = 10,     // op the switch does not accept (a reply op)
  kRankInUse = 11,       // JOIN from another address while the rank is bound and live
};

std::string_view ErrorName(ErrorCode code);

// The 64-bit JOIN cookie (docs/protocol.md, "Return routability") travels in
// a COOKIE's and a JOIN's header: its high 32 bits in `clock`, its low 32
// bits in `row`. 0 = none.
namespace cookie {
constexpr uint32_t High(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
constexpr uint32_t Low(uint64_t c) { return static_cast<uint32_t>(c); }
constexpr uint64_t Of(uint32_t clock, uint32_t row) { return uint64_t{clock} << 32 | row; }
// A COOKIE's flags: bits 8..15 hold the op of the request it answers, bits
// 0..7 are 0 (it carries no job flags).
constexpr uint16_t FlagsFor(Op answered) { return static_cast<uint16_t>(static_cast<uint16_t>(answered) << 8); }
constexpr Op AnsweredOp(uint16_t flags) { return static_cast<Op>(flags >> 8); }
}  // namespace cookie

// "No clock": `done` of a worker that completed nothing. Clock arithmetic is
// modulo 2^32, so kNoClock is the clock before 0.
inline constexpr uint32_t kNoClock = 0xFFFFFFFFu;

// `worker` of a reply no rank asked for: a completed row the switch sends to
// the job's reply group (docs/protocol.md, INC).
inline constexpr uint16_t kNoWorker = 0xFFFF;

// Signed distance a - b between clocks, modulo 2^32 (serial-number arithmetic).
constexpr int64_t ClockDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b);
}

// JOIN_ACK value layout (values[i]).
namespace join_ack {
inline constexpr size_t kWorkers = 0;
inline constexpr size_t kElements = 1;
inline constexpr size_t kRowWidth = 2;
inline constexpr size_t kDone = 3;
inline constexpr size_t kLow = 4;
inline constexpr size_t kHigh = 5;
inline constexpr size_t kEpoch = 6;
inline constexpr size_t kRows = 7;
inline constexpr size_t kScaleLog2 = 8;
// Drawn by the switch when it creates the job; changes only when the job is
// created again (a restarted switch): the job's state was lost.
inline constexpr size_t kIncarnation = 9;
inline constexpr size_t kCount = 10;
// Only when the job has a reply group: its IPv4 multicast address (as a
// uint32) and UDP port.
inline constexpr size_t kGroupAddress = 10;
inline constexpr size_t kGroupPort = 11;
inline constexpr size_t kCountWithGroup = 12;
}  // namespace join_ack

// ERROR value layout: the code, and the op of the refused request (whose
// clock and row the header echoes). An older switch sends only the code.
namespace error_reply {
inline constexpr size_t kCode = 0;
inline constexpr size_t kOp = 1;
inline constexpr size_t kCount = 2;
}  // namespace error_reply

// RELEASE value layout.
namespace release {
inline constexpr size_t kEpoch = 0;
inline constexpr size_t kLow = 1;
inline constexpr size_t kHigh = 2;
inline constexpr size_t kCount = 3;
}  // namespace release

// NACK values: [rows received, scan end, missing row, missing row, ...].
// Every row the worker still has to send is either listed or >= scan end.
// A NACK with only [rows received] is valid too: re-send every row.
namespace nack {
inline constexpr size_t kReceived = 0;
inline constexpr size_t kScanEnd = 1;
inline constexpr size_t kFirstMissing = 2;
}  // namespace nack

}  // namespace serene::proto
