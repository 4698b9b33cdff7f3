// Membership stage: who may send what (DESIGN.md §3-§4 "Membership").
//
// The ranks of a job are its members from creation. JOIN binds a rank to
// the source address (a repeated JOIN re-binds: a restarted worker); after
// that the rank's packets are accepted only from that address. A rank that
// was evicted or left is not live: the barrier no longer waits for it and
// its packets are refused until it JOINs again, when it resumes at the
// slowest live rank's clock (or its own, if ahead) from the switch's model.
//
// REQUIRES: the caller holds job.mu.
#pragma once

#include <cstdint>

#include "dataplane/counters.h"
#include "dataplane/job_state.h"
#include "dataplane/output.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

// Checks that `h` comes from a joined, live rank at its bound address.
// Returns kNone or the reason (kBadRank, kNotJoined, kWrongSource, kEvicted).
DropReason CheckSender(const JobState& job, const proto::Header& h, const proto::Endpoint& src);

// JOIN from `src` for rank `worker` (< N): binds the address, brings an
// evicted rank back, and replies JOIN_ACK. Ranks released as a consequence
// get RELEASE into `out` too.
void Join(JobState& job, uint32_t worker, const proto::Endpoint& src, Timestamp now, Output* out);

// Takes `worker` out of the barrier (evicted by the controller, or LEAVE) and
// releases the ranks that were waiting only for it.
void RemoveFromBarrier(JobState& job, uint32_t worker, Timestamp now, Output* out);

}  // namespace serene::dataplane
