// Capacities of the data plane: every register array is sized from these at
// job creation and never grows on the packet path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/packet.h"

namespace serene::dataplane {

// Nanoseconds on a monotonic clock. The data plane never reads a clock: the
// caller passes `now` with every packet.
using Timestamp = uint64_t;

// now - then, or 0 if `then` is later: time stamps taken by different switch
// threads may arrive slightly out of order, and a duration never wraps.
inline constexpr uint64_t Elapsed(Timestamp then, Timestamp now) {
  return now > then ? now - then : 0;
}

inline constexpr size_t kMaxWorkers = 1024;          // ranks per job (waiting set = 1024-bit bitmap)
inline constexpr size_t kMaxJobs = 1024;             // concurrent jobs
// Source prefixes in a job's allow-list (JobConfig::allow): a fixed table, so
// the source check is bounded work per packet.
inline constexpr size_t kMaxAllowPrefixes = 8;
inline constexpr uint32_t kMaxRowWidth = 16368;      // values per row: one 64 KiB datagram
inline constexpr uint32_t kDefaultRowWidth = 256;    // fits a 1500-byte MTU
inline constexpr uint64_t kMaxElements = 1ull << 31;  // 2 Gi int32 per job
inline constexpr uint32_t kDefaultScaleLog2 = 24;    // fixed point: 2^24 = 1.0
// A rank silent this long is evicted by the daemon (JobConfig::evict_after_ms):
// well above a training step and the client's probe interval (500 ms), well
// below the client's 30 s deadline, so peers go on before they give up.
inline constexpr uint32_t kDefaultEvictAfterMs = 10'000;
inline constexpr uint32_t kMaxEvictAfterMs = 3'600'000;  // an hour
// A NACK lists missing rows found by scanning at most this many rows of the
// worker's exactly-once tags (bounded work, like a fixed recirculation budget).
inline constexpr uint32_t kNackScanRows = 16384;

// Worst-case output of one Process() call: one reply of the largest row plus a
// RELEASE for every other rank.
inline constexpr size_t kMaxEmitPackets = kMaxWorkers + 1;
inline constexpr size_t kMaxEmitBytes =
    proto::kHeaderSize + kMaxRowWidth * proto::kValueSize +
    kMaxWorkers * (proto::kHeaderSize + proto::release::kCount * proto::kValueSize);

}  // namespace serene::dataplane
