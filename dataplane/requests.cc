#include "dataplane/requests.h"

#include <algorithm>

#include "dataplane/aggregation_table.h"
#include "dataplane/barrier.h"
#include "dataplane/membership.h"
#include "dataplane/reply.h"

namespace serene::dataplane {
namespace {

using proto::ErrorCode;

// Time stamps of different switch threads may arrive slightly out of order:
// "last seen" never goes back (the silence evictor reads it).
void NoteSeen(WorkerRegs& w, Timestamp now) { w.last_seen.StoreMax(now); }

ProcessResult Drop(JobState& job, DropReason reason) {
  ++job.counters.drops[static_cast<size_t>(reason)];
  return {Verdict::kDropped, reason};
}

// Refuses with ERROR `code` to the request's source `src`, from the address
// it reached, `local`.
ProcessResult Refuse(JobState& job, const proto::Endpoint& src, const proto::Endpoint& local,
                     const proto::Header& h, DropReason reason, ErrorCode code, Output* out) {
  ++job.counters.drops[static_cast<size_t>(reason)];
  EmitError(job, src, local, h, code, out);
  return {Verdict::kRefused, reason};
}

// Answers a request from a source the switch cannot vouch for (not the
// rank's bound address, no valid JOIN cookie) with one COOKIE, no larger
// than the request, and changes nothing but the drop counter `reason`.
ProcessResult Challenge(JobState& job, const proto::Endpoint& src, const proto::Endpoint& local,
                        const proto::Header& h, DropReason reason, Timestamp now, Output* out) {
  ++job.counters.drops[static_cast<size_t>(reason)];
  EmitCookie(job, src, local, h, now, out);
  return {Verdict::kRefused, reason};
}

// The sender check's reasons that mean "not from the rank's bound address".
bool Unverified(DropReason r) {
  return r == DropReason::kBadRank || r == DropReason::kNotJoined ||
         r == DropReason::kWrongSource;
}

ErrorCode SenderError(DropReason r) {
  switch (r) {
    case DropReason::kBadRank: return ErrorCode::kBadRank;
    case DropReason::kNotJoined: return ErrorCode::kNotJoined;
    case DropReason::kWrongSource: return ErrorCode::kWrongSource;
    default: return ErrorCode::kEvicted;
  }
}

// Validates the sender; on failure answers an unverified source with a
// COOKIE and the rank's bound address (an evicted rank) with ERROR, or
// drops (INC, whose `out` is null).
bool SenderOk(JobState& job, const proto::Header& h, const proto::Endpoint& src,
              const proto::Endpoint& local, Timestamp now, Output* out, ProcessResult* result) {
  const DropReason r = CheckSender(job, h, src);
  if (r == DropReason::kNone) {
    NoteSeen(job.workers[h.worker], now);
    return true;
  }
  if (out == nullptr) {
    *result = Drop(job, r);
  } else if (Unverified(r)) {
    *result = Challenge(job, src, local, h, r, now, out);
  } else {
    *result = Refuse(job, src, local, h, r, SenderError(r), out);
  }
  return false;
}

// Writes a NACK for CLOCK(clock, n), from `local` (the address the CLOCK
// reached): [received, scan_end, missing rows...]. Every row the worker may
// still have to send is listed or >= scan_end.
void EmitNack(JobState& job, uint32_t worker, uint32_t clock, uint32_t announced,
              const proto::Endpoint& local, Output* out) {
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
  uint8_t* v = EmitReplyRaw(job, w.addr, local, proto::Op::kNack, worker, clock, announced, 0,
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
  w.counters.nacks.AddExclusive(1);
  job.counters.nacks.AddExclusive(1);
}

// A reply's live sum was clamped after its header was written: flags the
// reply whose values start at `values` SATURATED.
void FlagSaturated(uint8_t* values) {
  uint8_t* flags = values - proto::kHeaderSize + proto::kOffFlags;
  proto::StoreU16(flags, static_cast<uint16_t>(proto::LoadU16(flags) | proto::flags::kSaturated));
}

// Row `row`, just completed at `clock` by every rank's INC, to the job's reply
// group as the exact row of clock + 1 (docs/protocol.md, "completed row"): the
// ranks receive it while they still push and wait, instead of READing it
// after their RELEASE. REQUIRES: the row's stripe.
void EmitCompletedRow(JobState& job, uint32_t clock, uint32_t row, const proto::Endpoint& local,
                      SharedTally& tally, Output* out) {
  const uint32_t next = clock + 1;
  if (out == nullptr || !job.config.group.valid() || next == proto::kNoClock ||
      !NoRankReleasedFrom(job, clock)) {
    return;
  }
  const uint16_t n = static_cast<uint16_t>(job.config.RowLength(row));
  uint8_t* v = EmitReplyRaw(job, job.config.group, local, proto::Op::kReadReply, proto::kNoWorker,
                            next, row, proto::flags::kExact | proto::flags::kGroup, n, out);
  if (v == nullptr) return;
  // The live table (visible + pending) is the model after `clock`; unless it
  // clamped, it is folded in the same pass (aggregation_table.h).
  if (ReadAndFoldCompletedRow(job, row, v) > 0) {
    FlagSaturated(v);
  } else {
    tally.CountFold();
  }
  tally.CountCompletedRow();
}

}  // namespace

namespace {

// Return routability: the rank's bound address, while the rank is live, was
// verified when it was bound; any other source must show it received a
// COOKIE by echoing it, before anything larger than the request is sent to
// it or it is bound.
bool BoundLive(const JobState& job, const proto::Header& h, const proto::Endpoint& src) {
  return h.worker < job.workers.size() && job.workers[h.worker].joined &&
         job.workers[h.worker].live && job.workers[h.worker].addr == src;
}

}  // namespace

bool JoinEchoesCookie(const JobState& job, const proto::Header& h, const proto::Endpoint& src,
                      Timestamp now) {
  return ValidJoinCookie(job.cookie_secret, src, job.config.id, h.worker, now,
                         proto::cookie::Of(h.clock, h.row));
}

bool ChallengeJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                   const proto::Endpoint& local, Timestamp now, SharedTally& tally, Output* out,
                   ProcessResult* result) {
  const proto::Header& h = pkt.header;
  if (BoundLive(job, h, src)) return false;
  tally.CountRx(h.op);
  *result = Challenge(job, src, local, h, DropReason::kJoinCookie, now, out);
  return true;
}

ProcessResult HandleJoin(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         const proto::Endpoint& local, Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  if (!BoundLive(job, h, src) && !JoinEchoesCookie(job, h, src, now)) {
    return Challenge(job, src, local, h, DropReason::kJoinCookie, now, out);
  }
  if (h.worker >= job.workers.size()) {
    return Refuse(job, src, local, h, DropReason::kBadRank, ErrorCode::kBadRank, out);
  }
  if (h.count != 0) {
    return Refuse(job, src, local, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  }
  // A live rank bound to another address keeps its binding: the refusal
  // changes nothing, not even the rank's last_seen, so a worker that died
  // is still evicted after evict_after and its successor then joins.
  const DropReason r = CheckJoin(job, h.worker, src);
  if (r != DropReason::kNone) {
    return Refuse(job, src, local, h, r, ErrorCode::kRankInUse, out);
  }
  NoteSeen(job.workers[h.worker], now);
  Join(job, h.worker, src, local, now, out);
  return {Verdict::kReplied};
}

ProcessResult HandleRead(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                         const proto::Endpoint& local, Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  if (!SenderOk(job, h, src, local, now, out, &result)) return result;
  if (h.count != 0) {
    return Refuse(job, src, local, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  }
  if (h.row >= job.rows) {
    return Refuse(job, src, local, h, DropReason::kBadRow, ErrorCode::kBadRow, out);
  }
  WorkerRegs& w = job.workers[h.worker];
  const uint32_t current = w.done + 1;
  if (h.clock != current) {
    return Refuse(job, src, local, h, DropReason::kBadClock, ErrorCode::kBadClock, out);
  }
  if (!w.released) {
    return Refuse(job, src, local, h, DropReason::kNotReleased, ErrorCode::kNotReleased, out);
  }
  // The row's registers are ours until the reply is written (other threads
  // may INC or READ other rows meanwhile).
  RowGuard row_guard(job.row_locks, h.row);
  // Fold first, so a saturation it causes is already in this reply's flags.
  MaybeFoldRow(job, h.row);
  const bool exact = ExactRead(job, h.clock);
  // An exact row is the same for every rank at this clock: to the job's
  // group, when the rank asked and there is one (one send reaches every
  // subscribed rank; P4: the job's multicast group).
  const bool to_group =
      exact && (h.flags & proto::flags::kGroup) != 0 && job.config.group.valid();
  uint16_t reply_flags = exact ? proto::flags::kExact : 0;
  if (to_group) reply_flags |= proto::flags::kGroup;
  const uint16_t n = static_cast<uint16_t>(job.config.RowLength(h.row));
  uint8_t* v = EmitReplyRaw(job, to_group ? job.config.group : src, local, proto::Op::kReadReply,
                            h.worker, h.clock, h.row, reply_flags, n, out);
  if (v == nullptr) return {Verdict::kDropped, DropReason::kNone};
  if (ReadRow(job, h.row, exact, h.clock, v) > 0) FlagSaturated(v);
  ++w.counters.reads;
  return {Verdict::kReplied};
}

ProcessResult HandleInc(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                        const proto::Endpoint& local, Timestamp now, SharedTally& tally,
                        Output* out) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  // INC never gets a reply, refused or not (only a row it completes is sent).
  if (!SenderOk(job, h, src, proto::Endpoint{}, now, nullptr, &result)) return result;
  if (h.row >= job.rows) return Drop(job, DropReason::kBadRow);
  if (h.count != job.config.RowLength(h.row)) return Drop(job, DropReason::kBadRowLength);
  WorkerRegs& w = job.workers[h.worker];
  const uint32_t current = w.done + 1;
  const int64_t d = proto::ClockDiff(h.clock, current);
  if (d < 0) return Drop(job, DropReason::kIncStale);
  if (d > 0 || !w.released) return Drop(job, DropReason::kIncEarly);
  if (h.clock == 0 && h.worker != 0) return Drop(job, DropReason::kIncSeedNotRank0);
  IncOutcome outcome;
  {
    RowGuard row_guard(job.row_locks, h.row);
    outcome = ApplyInc(job, h.worker, h.clock, h.row, pkt.values);
    if (outcome == IncOutcome::kRowComplete) {
      EmitCompletedRow(job, h.clock, h.row, local, tally, out);
    }
  }
  if (outcome == IncOutcome::kDuplicate) {
    ++w.counters.incs_duplicate;
    return Drop(job, DropReason::kIncDuplicate);
  }
  // rows_this_clock and incs_applied: a CLOCK, which reads them, waits for
  // the shared lock, so the tally reaches them before it does.
  tally.CountApplied(job, h.worker);
  return {Verdict::kApplied};
}

ProcessResult HandleClock(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          const proto::Endpoint& local, Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  ProcessResult result;
  if (!SenderOk(job, h, src, local, now, out, &result)) return result;
  if (h.count != 0) {
    return Refuse(job, src, local, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  }
  if (h.row > job.rows) {
    return Refuse(job, src, local, h, DropReason::kBadRowCount, ErrorCode::kBadRowCount, out);
  }
  WorkerRegs& w = job.workers[h.worker];
  if (h.clock == w.done && w.done != proto::kNoClock) {
    // Retransmission: idempotent answer.
    w.counters.clock_retransmits.AddExclusive(1);
    if (!w.released) return Drop(job, DropReason::kClockWaiting);
    EmitRelease(job, h.worker, local, out);
    return {Verdict::kReplied};
  }
  if (h.clock != w.done + 1) {
    return Refuse(job, src, local, h, DropReason::kBadClock, ErrorCode::kBadClock, out);
  }
  if (!w.released) return Drop(job, DropReason::kClockEarly);
  if (w.rows_this_clock != h.row) {
    EmitNack(job, h.worker, h.clock, h.row, local, out);
    return {Verdict::kReplied};
  }
  const uint32_t prev_done = w.done;
  CompleteClock(job, h.worker, h.clock, now);
  ReleaseAfterClock(job, h.worker, prev_done, now, out);
  return {w.released ? Verdict::kReplied : Verdict::kWaiting};
}

ProcessResult HandleLeave(JobState& job, const proto::PacketView& pkt, const proto::Endpoint& src,
                          const proto::Endpoint& local, Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  const DropReason r = CheckSender(job, h, src);
  if (Unverified(r)) return Challenge(job, src, local, h, r, now, out);
  if (r != DropReason::kNone && r != DropReason::kEvicted) {
    return Refuse(job, src, local, h, r, SenderError(r), out);
  }
  if (h.count != 0) {
    return Refuse(job, src, local, h, DropReason::kBadCount, ErrorCode::kBadCount, out);
  }
  NoteSeen(job.workers[h.worker], now);
  ProcessResult result{Verdict::kReplied};
  if (h.flags & proto::flags::kFinished) {
    // Only a live rank may end the job: an evicted one (or one that left)
    // is answered, so its client can exit, but its FINISHED is ignored.
    if (r == DropReason::kNone) {
      job.finished = true;
    } else {
      ++job.counters.drops[static_cast<size_t>(DropReason::kFinishNotLive)];
      result.reason = DropReason::kFinishNotLive;
    }
  }
  RemoveFromBarrier(job, h.worker, now, out);
  EmitReply(job, src, local, proto::Op::kLeave, h.worker, h.clock, 0, 0, {}, out);
  return result;
}

}  // namespace serene::dataplane
