#include "dataplane/requests.h"

#include <algorithm>

#include "dataplane/aggregation_table.h"
#include "dataplane/barrier.h"
#include "dataplane/membership.h"
#include "dataplane/reply.h"

namespace serene::dataplane {
namespace {

using proto::ErrorCode;

ProcessResult Drop(JobState& job, DropReason reason) {
  ++job.counters.drops[static_cast<size_t>(reason)];
  return {Verdict::kDropped, reason};
}

ProcessResult Refuse(JobState& job, const proto::Endpoint& src, const proto::Header& h,
                     DropReason reason, ErrorCode code, Output* out) {
  ++job.counters.drops[static_cast<size_t>(reason)];
  EmitError(job, src, h, code, out);
  return {Verdict::kRefused, reason};
}

ErrorCode SenderError(DropReason r) {
  switch (r) {
    case DropReason::kBadRank: return ErrorCode::kBadRank;
    case DropReason::kNotJoined: return ErrorCode::kNotJoined;
    case DropReason::kWrongSource: return ErrorCode::kWrongSource;
    default: return ErrorCode::kEvicted;
  }
}

// Validates the sender; on failure refuses with ERROR (or drops for INC).
bool SenderOk(JobState& job, const proto::Header& h, const proto::Endpoint& src, Timestamp now,
              Output* out, ProcessResult* result) {
  const DropReason r = CheckSender(job, h, src);
  if (r == DropReason::kNone) {
    job.workers[h.worker].last_seen = now;
    return true;
  }
  *result = out != nullptr ? Refuse(job, src, h, r, SenderError(r), out) : Drop(job, r);
  return false;
}

// Writes a NACK for CLOCK(clock, n): [received, scan_end, missing rows...].
// Every row the worker may still have to send is listed or >= scan_end.
void EmitNack(JobState& job, uint32_t worker, uint32_t clock, uint32_t announced, Output* out) {
  WorkerRegs& w = job.workers[worker];
  const uint32_t cap = std::max<uint32_t>(job.config.row_width, 16);
  const uint32_t max_missing = cap - proto::nack::kFirstMissing;
  const uint32_t scan_limit = std::min(job.rows, kNackScanRows);
  const uint32_t* tags = job.TagsOf(worker);

  // Two passes over at most kNackScanRows tags: count, then write.
  uint32_t listed = 0, scan_end = scan_limit;
  for (uint32_t r = 0; r < scan_limit; ++r) {
    if (tags[r] == clock) continue;
    if (listed == max_missing) {
      scan_end = r;
      break;
    }
    ++listed;
  }
  uint8_t* v = EmitReplyRaw(job, w.addr, proto::Op::kNack, worker, clock, announced, 0,
                            static_cast<uint16_t>(proto::nack::kFirstMissing + listed), out);
  if (v == nullptr) return;
  proto::StoreU32(v, w.rows_this_clock);
  proto::StoreU32(v + proto::kValueSize, scan_end);
  uint8_t* p = v + proto::nack::kFirstMissing * proto::kValueSize;
  for (uint32_t r = 0; r < scan_end; ++r) {
    if (tags[r] == clock) continue;
    proto::StoreU32(p, r);
    p += proto::kValueSize;
  }
  ++w.counters.nacks;
  ++job.counters.nacks;
}

}  // namespace

ProcessResult HandleJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  if (h.worker >= job.workers.size()) {
    return Refuse(job, src, h, DropReason::kBadRank, ErrorCode::kBadRank, out);
  }
  if (h.count != 0) return Refuse(job, src, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  job.workers[h.worker].last_seen = now;
  Join(job, h.worker, src, now, out);
  return {Verdict::kReplied};
}

ProcessResult HandleRead(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  if (!SenderOk(job, h, src, now, out, &result)) return result;
  if (h.count != 0) return Refuse(job, src, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  if (h.row >= job.rows) return Refuse(job, src, h, DropReason::kBadRow, ErrorCode::kBadRow, out);
  WorkerRegs& w = job.workers[h.worker];
  const uint32_t current = w.done + 1;
  if (h.clock != current) {
    return Refuse(job, src, h, DropReason::kBadClock, ErrorCode::kBadClock, out);
  }
  if (!w.released) {
    return Refuse(job, src, h, DropReason::kNotReleased, ErrorCode::kNotReleased, out);
  }
  // Fold first, so a saturation it causes is already in this reply's flags.
  MaybeFoldRow(job, h.row);
  const bool exact = ExactRead(job, h.clock);
  const uint16_t n = static_cast<uint16_t>(job.config.RowLength(h.row));
  uint8_t* v = EmitReplyRaw(job, src, proto::Op::kReadReply, h.worker, h.clock, h.row,
                            exact ? proto::flags::kExact : 0, n, out);
  if (v == nullptr) return {Verdict::kDropped, DropReason::kNone};
  ReadRow(job, h.row, exact, v);
  ++w.counters.reads;
  return {Verdict::kReplied};
}

ProcessResult HandleInc(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                        Timestamp now) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  // INC never gets a reply, refused or not.
  if (!SenderOk(job, h, src, now, nullptr, &result)) return result;
  if (h.row >= job.rows) return Drop(job, DropReason::kBadRow);
  if (h.count != job.config.RowLength(h.row)) return Drop(job, DropReason::kBadRowLength);
  WorkerRegs& w = job.workers[h.worker];
  const uint32_t current = w.done + 1;
  const int64_t d = proto::ClockDiff(h.clock, current);
  if (d < 0) return Drop(job, DropReason::kIncStale);
  if (d > 0 || !w.released) return Drop(job, DropReason::kIncEarly);
  if (h.clock == 0 && h.worker != 0) return Drop(job, DropReason::kIncSeedNotRank0);
  if (!ApplyInc(job, h.worker, h.clock, h.row, pkt.values)) {
    ++w.counters.incs_duplicate;
    return Drop(job, DropReason::kIncDuplicate);
  }
  ++w.rows_this_clock;
  ++w.counters.incs_applied;
  return {Verdict::kApplied};
}

ProcessResult HandleClock(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  if (!SenderOk(job, h, src, now, out, &result)) return result;
  if (h.count != 0) return Refuse(job, src, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  if (h.row > job.rows) {
    return Refuse(job, src, h, DropReason::kBadRowCount, ErrorCode::kBadRowCount, out);
  }
  WorkerRegs& w = job.workers[h.worker];
  if (h.clock == w.done && w.done != proto::kNoClock) {
    // Retransmission: idempotent answer.
    ++w.counters.clock_retransmits;
    if (!w.released) return Drop(job, DropReason::kClockWaiting);
    EmitRelease(job, h.worker, out);
    return {Verdict::kReplied};
  }
  if (h.clock != w.done + 1) {
    return Refuse(job, src, h, DropReason::kBadClock, ErrorCode::kBadClock, out);
  }
  if (!w.released) return Drop(job, DropReason::kClockEarly);
  if (w.rows_this_clock != h.row) {
    EmitNack(job, h.worker, h.clock, h.row, out);
    return {Verdict::kReplied};
  }
  CompleteClock(job, h.worker, h.clock, now);
  ReleaseEligible(job, now, out);
  return {w.released ? Verdict::kReplied : Verdict::kWaiting};
}

ProcessResult HandleLeave(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  const DropReason r = CheckSender(job, h, src);
  if (r != DropReason::kNone && r != DropReason::kEvicted) {
    return Refuse(job, src, h, r, SenderError(r), out);
  }
  if (h.count != 0) return Refuse(job, src, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  job.workers[h.worker].last_seen = now;
  if (h.flags & proto::flags::kFinished) job.finished = true;
  RemoveFromBarrier(job, h.worker, now, out);
  EmitReply(job, src, proto::Op::kLeave, h.worker, h.clock, 0, 0, {}, out);
  return {Verdict::kReplied};
}

}  // namespace serene::dataplane
