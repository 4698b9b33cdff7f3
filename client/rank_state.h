// RankState: what the client knows of its rank and its job, shared by the
// operations (join, pull, clock, leave) a Client runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "include/serene/client.h"
#include "proto/packet.h"

namespace serene::client {

struct RankState {
  bool joined = false;
  JobInfo info;                      // the last JOIN_ACK's view of the job
  uint32_t done = proto::kNoClock;   // last released clock: the rank is in done + 1
  std::vector<int32_t> inc;          // this clock's update, kept for NACK re-sends
  // The update of clock done + 1 as pushed, which NACKs re-send rows of:
  // `inc`, or during an ExchangeFixed the caller's update (not copied; it
  // outlives the clock).
  std::span<const int32_t> pushed_values;
  bool pushed = false;               // pushed_values holds an update of clock done + 1

  uint32_t clock() const { return done + 1; }
};

// "-1" for kNoClock, else the number.
std::string ClockText(uint32_t clock);

// The row a rank's pulls and pushes start at (then every row once, in order,
// wrapping): rank * rows / workers. Ranks released together then touch
// different rows, which a switch with several threads serves in parallel.
// Any order is correct: the switch keys every READ and INC by its row.
inline uint32_t FirstRow(uint32_t rank, const JobInfo& info) {
  if (rank >= info.workers) return 0;
  return static_cast<uint32_t>(uint64_t{rank} * info.rows / info.workers);
}

// The i-th row a rank visits, i < info.rows.
inline uint32_t RowAt(uint32_t first, uint32_t i, uint32_t rows) {
  const uint32_t r = first + i;
  return r < rows ? r : r - rows;
}

}  // namespace serene::client
