// Reply: the deparser. Builds the packets the switch emits (JOIN_ACK,
// READ_REPLY, RELEASE, NACK, LEAVE, ERROR) into an Output. Every reply echoes
// job and worker, carries the job's key and the job-wide flags (saturated,
// finished).
#pragma once

#include <cstdint>
#include <span>

#include "dataplane/job_state.h"
#include "dataplane/output.h"
#include "proto/codec.h"

namespace serene::dataplane {

// Flags every reply of this job carries.
uint16_t JobFlags(const JobState& job);

// Every Emit takes the switch address to send from, `src`: the address the
// request reached for a reply, the one the rank's JOIN reached (WorkerRegs::
// local) for a packet no request of that rank asked for. Invalid: any.

// Appends a reply with `values` to `dst`. Returns the values area (so READ
// replies can be filled in place) or nullptr if `out` is full.
uint8_t* EmitReply(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                   proto::Op op, uint32_t worker, uint32_t clock, uint32_t row,
                   uint16_t extra_flags, std::span<const int32_t> values, Output* out);

// Appends a reply whose `count` values the caller writes (big-endian) into the
// returned area. nullptr if `out` is full.
uint8_t* EmitReplyRaw(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                      proto::Op op, uint32_t worker, uint32_t clock, uint32_t row,
                      uint16_t extra_flags, uint16_t count, Output* out);

// COOKIE to `dst` (docs/protocol.md, "Return routability"): header only, the
// size of the smallest request, echoing job and worker, the job's key, the
// cookie of (dst, job, worker) at `now` in clock and row, and the answered
// request's op in flags bits 8..15. It carries no job state (no job flags).
void EmitCookie(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                const proto::Header& req, Timestamp now, Output* out);

// ERROR [code, req.op] to `dst`, echoing the request's clock and row; counted
// on the job (and the rank when it exists).
void EmitError(JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
               const proto::Header& req, proto::ErrorCode code, Output* out);

}  // namespace serene::dataplane
