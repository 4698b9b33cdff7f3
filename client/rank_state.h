// RankState: what the client knows of its rank and its job, shared by the
// operations (join, pull, clock, leave) a Client runs.
#pragma once

#include <cstdint>
#include <vector>

#include "include/serene/client.h"
#include "proto/packet.h"

namespace serene::client {

struct RankState {
  bool joined = false;
  JobInfo info;                      // the last JOIN_ACK's view of the job
  uint32_t done = proto::kNoClock;   // last released clock: the rank is in done + 1
  std::vector<int32_t> inc;          // this clock's update, kept for NACK re-sends
  bool pushed = false;               // `inc` holds an update of clock done + 1

  uint32_t clock() const { return done + 1; }
};

// "-1" for kNoClock, else the number.
std::string ClockText(uint32_t clock);

}  // namespace serene::client
