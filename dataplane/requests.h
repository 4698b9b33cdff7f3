// Request handlers: one per op a worker sends, run after the packet was
// parsed and authenticated (job found, key right, source allowed). Each
// validates the request against the job's state before touching it, so a
// refused request changes nothing; every early exit returns its reason.
//
// `src` is the request's source (the worker), `local` the switch address it
// reached (invalid when unknown): replies go to `src`, from `local`.
//
// REQUIRES: the caller holds job.mu: shared for HandleRead and HandleInc
// (they lock their row's stripe themselves), exclusive for the others.
#pragma once

#include "dataplane/job_state.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"
#include "dataplane/shared_tally.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

ProcessResult HandleJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         const proto::Endpoint& local, Timestamp now, Output* out);
// The first step of HandleJoin, which reads the job's state and writes none,
// for a JOIN that does not echo a valid cookie (JoinEchoesCookie, checked by
// the caller): unless it comes from its rank's live bound address, it is
// answered with a COOKIE here (true, *result set), under
// the job's shared lock, so a key holder's cookie-less JOINs cost the job's
// INC and READ no exclusive hold. False: the JOIN needs HandleJoin
// (exclusive). Counts the JOIN in `tally` when it answers.
// REQUIRES: job.mu held shared (or exclusive).
bool ChallengeJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                   const proto::Endpoint& local, Timestamp now, SharedTally& tally, Output* out,
                   ProcessResult* result);
// Whether a JOIN echoes a valid cookie for its source: reads only the job's
// secret, fixed at its creation, so no lock is needed.
bool JoinEchoesCookie(const JobState& job, const proto::Header& h, const proto::Endpoint& src,
                      Timestamp now);
ProcessResult HandleRead(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         const proto::Endpoint& local, Timestamp now, Output* out);
// An INC gets no reply, but the INC that completes a row (every rank INC'd
// it at this clock, in exact mode) sends the row to the job's reply group.
// An applied INC and a row it sends are counted in `tally`, which the caller
// adds to the job before it releases the lock (shared_tally.h).
ProcessResult HandleInc(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                        const proto::Endpoint& local, Timestamp now, SharedTally& tally,
                        Output* out);
ProcessResult HandleClock(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          const proto::Endpoint& local, Timestamp now, Output* out);
// A LEAVE of a rank that is not live is answered, but its FINISHED flag is
// ignored (only a live rank may end the job): reason kFinishNotLive.
ProcessResult HandleLeave(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          const proto::Endpoint& local, Timestamp now, Output* out);

}  // namespace serene::dataplane
