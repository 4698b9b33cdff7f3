// The pipeline fuzzer's input format: a setup byte, then a sequence of
// actions against one Pipeline holding up to two jobs. Shared by
// pipeline_fuzzer.cc (which reads it) and make_corpus.cc (which writes seeds),
// so a seed means the same thing to both. See docs/fuzzing.md.
//
//   input   := setup action*
//   setup   := u8: bits 0-2 policy of job A, bit 3 job B exists, bits 4-6 its policy
//   action  := u8 kind (low 4 bits: Action; bit 4: job B instead of A), operands
//
// Operands per action (every read past the end of the input yields 0):
// A rank byte picks the rank (b % (N + 1): sometimes out of range; >= 0xF8 a
// raw rank) and, with bit 6, which switch address the request reaches.
//
//   kJoin, kLeave        rank, mods                   (kLeave: + u8, odd = FINISHED)
//   kRead                rank, mods, clock, row
//   kInc                 rank, mods, clock, row, one value byte per element
//   kClock               rank, mods, clock, rows
//   kStep                rank, value                  INC every row at the rank's
//                                                     current clock, then CLOCK
//   kRawOp               op, mods, u16 worker, u32 clock, u32 row, u16 flags,
//                        u8 count (0..7), count value bytes
//   kGarbage             u8 length, that many bytes   (a raw datagram)
//   kMutate              like kRawOp, then u8 position, u8 xor (0: truncate there)
//   kAdvance             u16 d: now += d·100 µs; d >= 0xF000: now -= (d & 0xFFF) ms
//   kSetPolicy           policy, effective            (see SelectEffective);
//                        policy 0xE0..0xEF: CancelPolicyChange instead, with
//                        the pending epoch (effective >= 0x80: odd = a wrong
//                        one) or none
//   kEvict               rank
//   kEvictIfSilent       rank, u8 silence in 10 ms
//   kFinish              —
//   kRecreate            policy: DeleteJob, then CreateJob with that policy
//   kTelemetry           —                            (the oracle runs anyway)
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "dataplane/barrier_params.h"
#include "dataplane/job_config.h"
#include "proto/endpoint.h"

namespace serene::fuzz {

enum class Action : uint8_t {
  kJoin = 0,
  kRead,
  kInc,
  kClock,
  kLeave,
  kStep,
  kRawOp,
  kGarbage,
  kMutate,
  kAdvance,
  kSetPolicy,
  kEvict,
  kEvictIfSilent,
  kFinish,
  kRecreate,
  kTelemetry,
};
inline constexpr uint8_t kJobBBit = 0x10;

// At most this many actions per input: bounded work per run.
inline constexpr size_t kMaxActions = 256;

// The two jobs: small geometry with a short last row.
struct FuzzJob {
  uint16_t id;
  uint32_t workers;
  uint64_t elements;
  uint32_t row_width;
  uint32_t key;
};
inline constexpr std::array<FuzzJob, 2> kJobs = {{
    {1, 3, 10, 4, 0xC0FFEEu},   // rows of 4, 4, 2
    {7, 2, 3, 2, 0x0000BEEFu},  // rows of 2, 1
}};
inline constexpr uint16_t kUnknownJobId = 999;
inline constexpr const char* kJobAGroup = "239.83.0.1:7100";

// Job B admits only IPv4 loopback sources (its allow-list, 127.0.0.0/8): the
// IPv6 "stranger" address is dropped there as source_not_allowed.
inline constexpr const char* kJobBAllow = "127.0.0.0/8";
inline bool Allowed(size_t slot, const proto::Endpoint& src) {
  return slot == 0 || (src.family == proto::Endpoint::Family::kIPv4 && src.addr[0] == 127);
}

// The switch addresses a request may reach (Process's `local`): the high bits
// of the rank byte pick one, or none (invalid: unknown).
inline proto::Endpoint LocalOf(uint8_t rank_byte) {
  proto::Endpoint e;
  if (rank_byte >= 0xF8) return e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.addr = {127, 0, 0, static_cast<uint8_t>(rank_byte & 0x40 ? 101 : 100)};
  e.port = 7000;
  return e;
}

// Policies chosen by a 3-bit selector (setup byte, kRecreate, kSetPolicy).
inline dataplane::BarrierParams PolicyOf(uint8_t sel) {
  using dataplane::BarrierParams;
  switch (sel & 7) {
    case 0:
      return BarrierParams::Sync();
    case 1:
      return BarrierParams::Ssp(1);
    case 2:
      return BarrierParams::Ssp(2);
    case 3:
      return BarrierParams::Async();
    case 4:
      return BarrierParams::Quorum(2, 1);
    case 5:
      return BarrierParams::Quorum(2, 0);
    case 6:
      return BarrierParams{0, BarrierParams::kAllWorkers, 3};  // exact, W = 0
    default:
      return BarrierParams{1, 1, 2};
  }
}

inline dataplane::JobConfig ConfigOf(size_t slot, uint8_t policy_sel) {
  dataplane::JobConfig c;
  c.id = kJobs[slot].id;
  c.workers = kJobs[slot].workers;
  c.elements = kJobs[slot].elements;
  c.row_width = kJobs[slot].row_width;
  c.key = kJobs[slot].key;
  c.policy = PolicyOf(policy_sel);
  if (slot == 1) c.allow = *dataplane::SourceAllowList::Parse(kJobBAllow);
  // Job A has a reply group (exact READs flagged GROUP and completed rows go
  // there); job B has none.
  if (slot == 0) c.group = *dataplane::ParseGroup(kJobAGroup);
  return c;
}

// An INC value from one byte: small numbers mostly, the int32 extremes from
// 0xF0 up (so a few INCs reach saturation).
inline int32_t ValueOf(uint8_t b) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  static constexpr std::array<int32_t, 16> kExtremes = {
      kMax,    kMin,       kMax - 1, kMin + 1,   1 << 30, -(1 << 30), (1 << 30) + 1, 0x40000000 - 1,
      1 << 29, -(1 << 29), 1 << 16,  -(1 << 16), 1000000, -1000000,   0x7FFF0000,    -0x7FFF0000};
  if (b >= 0xF0) return kExtremes[b & 0x0F];
  return static_cast<int8_t>(b);
}

// Packet modifiers (the `mods` byte). 0 is a well-formed request from the
// rank's own address.
namespace mods {
inline constexpr uint8_t kFaultMask = 0x07;  // 0..4 none
inline constexpr uint8_t kWrongKey = 5;
inline constexpr uint8_t kUnknownJob = 6;
inline constexpr uint8_t kOtherJobsId = 7;  // the other job's id, this job's key
inline constexpr uint8_t kAddrShift = 3;    // bits 3-4: 0-1 own, 2 another rank's, 3 stranger
inline constexpr uint8_t kRetransmit = 0x20;
inline constexpr uint8_t kReservedFlags = 0x40;
inline constexpr uint8_t kExtraValue = 0x80;  // one value too many
}  // namespace mods

// Clock selector byte, relative to the rank's `done` (d) before the action:
// low 4 bits 0-9 d+1 (current), 10 d, 11 d+2, 12 d-1, 13 0, 14 kNoClock,
// 15 a raw u32. A READ's selector with kReadGroupBit set asks for the group.
inline constexpr uint8_t kReadGroupBit = 0x10;
inline constexpr uint8_t kClockCurrent = 0;
// Row selector: 0-5 sel % rows, 6 rows (out of range), 7 a raw u32.
// CLOCK row-count selector: 0-4 rows INC'd this clock (right), 5 all rows,
// 6 rows + 1, 7 a raw u32.

// Writes inputs in this format (make_corpus).
class ActionWriter {
 public:
  explicit ActionWriter(uint8_t setup) { bytes_.push_back(setup); }
  ActionWriter& U8(uint8_t b) {
    bytes_.push_back(b);
    return *this;
  }
  ActionWriter& U16(uint16_t v) {
    return U8(static_cast<uint8_t>(v >> 8)).U8(static_cast<uint8_t>(v));
  }
  ActionWriter& U32(uint32_t v) {
    return U16(static_cast<uint16_t>(v >> 16)).U16(static_cast<uint16_t>(v));
  }
  ActionWriter& Act(Action a, bool job_b = false) {
    return U8(static_cast<uint8_t>(static_cast<uint8_t>(a) | (job_b ? kJobBBit : 0)));
  }
  ActionWriter& Join(uint8_t rank, bool b = false) { return Act(Action::kJoin, b).U8(rank).U8(0); }
  ActionWriter& Step(uint8_t rank, int8_t value, bool b = false) {
    return Act(Action::kStep, b).U8(rank).U8(static_cast<uint8_t>(value));
  }
  ActionWriter& Read(uint8_t rank, uint8_t row, bool b = false) {
    return Act(Action::kRead, b).U8(rank).U8(0).U8(kClockCurrent).U8(row);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace serene::fuzz
