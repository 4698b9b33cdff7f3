// Membership stage: who may send what (DESIGN.md §3-§4 "Membership").
//
// The ranks of a job are its members from creation. JOIN binds a rank to
// the source address; after that the rank's packets are accepted only from
// that address. A JOIN from the bound address is idempotent. A JOIN from
// another address re-binds the rank only if it is not live (evicted, or it
// sent LEAVE): a restarted worker on a new port joins once its old binding
// was evicted. While the rank is live such a JOIN is refused (rank_in_use),
// so a host that knows the key cannot take over a working rank. A rank that
// was evicted or left is not live: the barrier no longer waits for it and
// its packets are refused until it JOINs again, when it resumes at the
// slowest live rank's clock — with no rank live, the highest clock any rank
// completed — or its own, if ahead, from the switch's model.
//
// REQUIRES: the caller holds job.mu exclusive (shared suffices for the
// read-only checks, which INC and READ run).
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

// Whether rank `worker` (< N) may JOIN from `src`: kNone, or kRankInUse when
// the rank is bound to another address and live.
DropReason CheckJoin(const JobState& job, uint32_t worker, const proto::Endpoint& src);

// JOIN from `src` to the switch address `local` for rank `worker` (< N),
// allowed by CheckJoin: binds both addresses, brings an evicted rank back,
// and replies JOIN_ACK from `local`. Ranks released as a consequence get
// RELEASE into `out` too.
void Join(JobState& job, uint32_t worker, const proto::Endpoint& src, const proto::Endpoint& local,
          Timestamp now, Output* out);

// Takes `worker` out of the barrier (evicted by the controller, or LEAVE) and
// releases the ranks that were waiting only for it.
void RemoveFromBarrier(JobState& job, uint32_t worker, Timestamp now, Output* out);

}  // namespace serene::dataplane
