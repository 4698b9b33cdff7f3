// Request handlers: one per op a worker sends, run after the packet was
// parsed and authenticated (job found, key right). Each validates the
// request against the job's state before touching it, so a refused request
// changes nothing; every early exit returns its reason.
//
// REQUIRES: the caller holds job.mu.
#pragma once

#include "dataplane/job_state.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

ProcessResult HandleJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         Timestamp now, Output* out);
ProcessResult HandleRead(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         Timestamp now, Output* out);
ProcessResult HandleInc(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                        Timestamp now);
ProcessResult HandleClock(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          Timestamp now, Output* out);
ProcessResult HandleLeave(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          Timestamp now, Output* out);

}  // namespace serene::dataplane
