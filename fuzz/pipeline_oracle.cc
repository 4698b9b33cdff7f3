#include "fuzz/pipeline_oracle.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "fuzz/pipeline_actions.h"
#include "fuzz/reference_parse.h"

namespace serene::fuzz {

using dataplane::DropReason;
using dataplane::Verdict;
using proto::Op;

namespace {

std::string S(uint64_t v) { return std::to_string(v); }

void Put(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), sizeof v); }

int64_t Clamp32(int64_t v) {
  return std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
}

bool IsSenderReason(DropReason r) {
  return r == DropReason::kBadRank || r == DropReason::kNotJoined ||
         r == DropReason::kWrongSource || r == DropReason::kEvicted;
}

bool IsPreAuthReason(DropReason r) {
  return r == DropReason::kParse || r == DropReason::kNotRequest || r == DropReason::kUnknownJob ||
         r == DropReason::kBadKey;
}

// Global counters other than `packets`, as one vector.
std::vector<uint64_t> Globals(const dataplane::GlobalCounters& g) {
  std::vector<uint64_t> v(g.parse_errors.begin(), g.parse_errors.end());
  v.push_back(g.unknown_job);
  v.push_back(g.not_request);
  v.push_back(g.bad_key);
  return v;
}

}  // namespace

std::string Digest(const JobSnapshot& j, bool with_counters) {
  std::string s;
  if (!j.exists) return s;
  s.reserve(2048);
  const dataplane::JobTelemetry& t = j.t;
  for (uint64_t v : {uint64_t{t.rows}, uint64_t{t.live_workers}, uint64_t{t.low}, uint64_t{t.high},
                     uint64_t{t.active.window}, uint64_t{t.active.quorum}, uint64_t{t.active.lag},
                     uint64_t{t.active_epoch}, uint64_t{t.swap_pending}, uint64_t{t.next.window},
                     uint64_t{t.next.quorum}, uint64_t{t.next.lag}, uint64_t{t.next_epoch},
                     uint64_t{t.swap_clock}, uint64_t{t.max_released}, uint64_t{t.saturated},
                     uint64_t{t.finished}}) {
    Put(&s, v);
  }
  for (int32_t v : j.model) Put(&s, static_cast<uint32_t>(v));
  if (with_counters) {
    const dataplane::JobCounters& c = t.counters;
    for (uint64_t v : c.rx_by_op) Put(&s, v);
    for (uint64_t v : c.drops) Put(&s, v);
    for (uint64_t v :
         {c.saturations, c.folds, c.completed_rows, c.releases, c.nacks, c.errors, c.swaps}) {
      Put(&s, v);
    }
  }
  for (const dataplane::WorkerTelemetry& w : t.workers) {
    for (uint64_t v :
         {uint64_t{w.rank}, uint64_t{w.done}, uint64_t{w.joined}, uint64_t{w.live},
          uint64_t{w.waiting}, uint64_t{w.rows_this_clock}, w.wait_since, w.completed_at, w.iter_ns,
          w.work_ns, w.last_work_ns, uint64_t{static_cast<uint8_t>(w.addr.family)},
          uint64_t{w.addr.port}, uint64_t{w.addr.scope_id}}) {
      Put(&s, v);
    }
    s.append(reinterpret_cast<const char*>(w.addr.addr.data()), w.addr.addr.size());
    Put(&s, (uint64_t{static_cast<uint8_t>(w.local.family)} << 32) | w.local.port);
    s.append(reinterpret_cast<const char*>(w.local.addr.data()), w.local.addr.size());
    if (with_counters) {
      const dataplane::WorkerCounters& c = w.counters;
      for (uint64_t v :
           {w.last_seen, c.joins, c.reads, c.incs_applied, c.incs_duplicate, c.clocks,
            c.clock_retransmits, c.nacks, c.releases, c.errors, c.wait_ns, c.evictions}) {
        Put(&s, v);
      }
    }
  }
  return s;
}

void Oracle::Fail(const char* file, int line, const std::string& what) const {
  std::fprintf(stderr, "\npipeline_fuzzer: invariant broken at action %zu (%s)\n  %s:%d: %s\n",
               index_, what_, file, line, what.c_str());
  std::abort();
}

bool Oracle::Tolerated(const char* finding_id) {
  static const std::string list = [] {
    const char* env = std::getenv("SERENE_FUZZ_TOLERATE");
    return "," + std::string(env != nullptr ? env : "") + ",";
  }();
  return list.find("," + std::string(finding_id) + ",") != std::string::npos;
}

Oracle::Oracle(dataplane::Pipeline* pipeline) : pipeline_(pipeline) {
  for (size_t slot = 0; slot < jobs_.size(); ++slot) jobs_[slot].config = ConfigOf(slot, 0);
}

Snapshot Oracle::Take() const {
  Snapshot s;
  s.g = pipeline_->global_counters();
  for (size_t slot = 0; slot < jobs_.size(); ++slot) {
    JobSnapshot& j = s.jobs[slot];
    j.generation = jobs_[slot].generation;
    auto t = pipeline_->Telemetry(jobs_[slot].config.id);
    j.exists = t.ok();
    ORACLE_CHECK(*this, j.exists == jobs_[slot].exists, "Telemetry of slot " + S(slot));
    if (!j.exists) continue;
    j.t = *t;
    auto m = pipeline_->Model(jobs_[slot].config.id);
    ORACLE_CHECK(*this, m.ok(), "Model of an existing job");
    j.model = *m;
  }
  return s;
}

int Oracle::SlotOf(uint16_t job_id) const {
  for (size_t slot = 0; slot < jobs_.size(); ++slot) {
    if (jobs_[slot].exists && jobs_[slot].config.id == job_id) return static_cast<int>(slot);
  }
  return -1;
}

void Oracle::Created(size_t slot, const dataplane::JobConfig& config) {
  JobExpect& j = jobs_[slot];
  const uint64_t generation = j.generation + 1;
  j = JobExpect{};
  j.exists = true;
  j.generation = generation;
  j.config = config;
  j.sum.assign(config.elements, 0);
  j.params_of_epoch[0] = config.policy;
  j.last_release.resize(config.workers);
}

void Oracle::Deleted(size_t slot) { jobs_[slot].exists = false; }  // config stays: ids, keys

void Oracle::PolicyInstalled(size_t slot, uint32_t epoch, const dataplane::BarrierParams& params) {
  JobExpect& j = jobs_[slot];
  ++j.installs;
  ORACLE_CHECK(*this, epoch == j.installs, "epochs count the installs: got " + S(epoch));
  j.params_of_epoch[epoch] = params;
}

void Oracle::PolicyCancelled(size_t slot, uint32_t epoch) {
  jobs_[slot].params_of_epoch.erase(epoch);
}

std::vector<Emitted> Oracle::DecodeAll(const dataplane::Output& out) const {
  std::vector<Emitted> all;
  for (size_t i = 0; i < out.size(); ++i) {
    auto bytes = out.bytes(i);
    proto::PacketView v;
    const proto::ParseError err = proto::Decode(bytes.data(), bytes.size(), &v);
    ORACLE_CHECK(
        *this, err == proto::ParseError::kOk,
        "emitted packet " + S(i) + " does not decode: " + std::string(proto::ParseErrorName(err)));
    Emitted e{out.packet(i).dst, out.packet(i).src, v.header, {}};
    for (size_t k = 0; k < v.header.count; ++k) e.v.push_back(v.Value(k));
    all.push_back(std::move(e));
  }
  return all;
}

void Oracle::AfterPacket(const Snapshot& before, const Snapshot& after,
                         std::span<const uint8_t> datagram, const proto::Endpoint& src,
                         const proto::Endpoint& local, dataplane::Timestamp now,
                         const dataplane::ProcessResult& r, const dataplane::Output& out) {
  const std::vector<Emitted> emitted = DecodeAll(out);
  ORACLE_CHECK(*this, after.g.packets == before.g.packets + 1, "one Process, one packet counted");
  std::vector<uint64_t> globals = Globals(before.g);
  const std::vector<uint64_t> globals_after = Globals(after.g);
  // Index of each global counter in Globals().
  const size_t kUnknownJob = proto::kNumParseErrors, kNotRequest = kUnknownJob + 1,
               kBadKey = kNotRequest + 1;

  // Pre-authentication failures: nothing of any job changes, no reply, one
  // global counter (bad_key also counts on the job it named).
  auto unchanged_but = [&](int counted_slot, DropReason job_reason) {
    ORACLE_CHECK(*this, emitted.empty(), "no reply to a packet that fails parse/job/key");
    ORACLE_CHECK(*this, r.verdict == Verdict::kDropped, "dropped silently");
    ORACLE_CHECK(*this, globals_after == globals, "exactly one global counter, by reason");
    for (size_t slot = 0; slot < 2; ++slot) {
      JobSnapshot expected = after.jobs[slot];
      if (static_cast<int>(slot) == counted_slot) {
        --expected.t.counters.drops[static_cast<size_t>(job_reason)];
      }
      ORACLE_CHECK(*this, Digest(expected, true) == Digest(before.jobs[slot], true),
                   "a packet that failed parse/job/key changed job slot " + S(slot));
    }
  };
  const proto::ParseError pe = ReferenceParse(datagram.data(), datagram.size());
  if (pe != proto::ParseError::kOk) {
    ORACLE_CHECK(*this, r.reason == DropReason::kParse && r.parse_error == pe,
                 "parse verdict " + std::string(proto::ParseErrorName(r.parse_error)) +
                     " expected " + std::string(proto::ParseErrorName(pe)));
    ++globals[static_cast<size_t>(pe)];
    return unchanged_but(-1, DropReason::kNone);
  }
  ORACLE_CHECK(*this, r.parse_error == proto::ParseError::kOk, "parse error on a good packet");
  proto::PacketView pkt;
  ORACLE_CHECK(*this,
               proto::Decode(datagram.data(), datagram.size(), &pkt) == proto::ParseError::kOk,
               "Decode agrees with the reference");
  const proto::Header& h = pkt.header;
  if (!ReferenceIsRequest(static_cast<uint8_t>(h.op))) {
    ORACLE_CHECK(*this, r.reason == DropReason::kNotRequest, "reply op sent to the switch");
    ++globals[kNotRequest];
    return unchanged_but(-1, DropReason::kNone);
  }
  const int slot = SlotOf(h.job);
  if (slot < 0) {
    ORACLE_CHECK(*this, r.reason == DropReason::kUnknownJob, "job " + S(h.job) + " is unknown");
    ++globals[kUnknownJob];
    return unchanged_but(-1, DropReason::kNone);
  }
  if (h.key != jobs_[slot].config.key) {
    ORACLE_CHECK(*this, r.reason == DropReason::kBadKey, "wrong key");
    ++globals[kBadKey];
    return unchanged_but(slot, DropReason::kBadKey);
  }

  // The job's allow-list: dropped silently, counted on the job only.
  if (!Allowed(static_cast<size_t>(slot), src)) {
    ORACLE_CHECK(*this, r.reason == DropReason::kSourceNotAllowed, "source outside the allow-list");
    return unchanged_but(slot, DropReason::kSourceNotAllowed);
  }

  // Authenticated: counted once on the job by op, nothing global but `packets`.
  ORACLE_CHECK(*this, !IsPreAuthReason(r.reason) && r.reason != DropReason::kSourceNotAllowed,
               "authenticated packet dropped as a stranger");
  ORACLE_CHECK(*this, globals_after == globals, "authenticated packets count on the job only");
  const size_t other = 1 - static_cast<size_t>(slot);
  ORACLE_CHECK(*this, Digest(after.jobs[other], true) == Digest(before.jobs[other], true),
               "a packet of one job changed the other");
  const Request req{h, src, local, r, now};
  CheckAuthenticated(static_cast<size_t>(slot), before, after, pkt, req, emitted);
}

void Oracle::CheckAuthenticated(size_t slot, const Snapshot& before, const Snapshot& after,
                                const proto::PacketView& pkt, const Request& req,
                                const std::vector<Emitted>& emitted) {
  JobExpect& je = jobs_[slot];
  const JobSnapshot& jb = before.jobs[slot];
  const JobSnapshot& ja = after.jobs[slot];
  const proto::Header& h = req.h;
  const dataplane::ProcessResult& r = req.r;
  const dataplane::JobCounters& cb = jb.t.counters;
  const dataplane::JobCounters& ca = ja.t.counters;

  // Counters: rx_by_op once; one drop reason for a refused or dropped packet.
  for (size_t op = 0; op < cb.rx_by_op.size(); ++op) {
    const uint64_t want = cb.rx_by_op[op] + (op == static_cast<size_t>(h.op) ? 1 : 0);
    ORACLE_CHECK(*this, ca.rx_by_op[op] == want, "rx_by_op[" + S(op) + "]");
  }
  const bool failed = r.verdict == Verdict::kRefused || r.verdict == Verdict::kDropped;
  // A reason iff refused or dropped; the one exception is a LEAVE with
  // FINISHED from a rank that is not live: answered, FINISHED ignored.
  const bool finish_ignored = r.reason == DropReason::kFinishNotLive;
  ORACLE_CHECK(*this, failed == (r.reason != DropReason::kNone && !finish_ignored),
               "a reason iff refused or dropped: " + std::string(DropReasonName(r.reason)));
  for (size_t i = 0; i < cb.drops.size(); ++i) {
    const uint64_t want =
        cb.drops[i] + (r.reason != DropReason::kNone && i == static_cast<size_t>(r.reason) ? 1 : 0);
    ORACLE_CHECK(*this, ca.drops[i] == want,
                 "drops[" + std::string(DropReasonName(static_cast<DropReason>(i))) + "]");
  }
  size_t errors = 0, nacks = 0, releases = 0;
  for (const Emitted& e : emitted) {
    errors += e.h.op == Op::kError;
    nacks += e.h.op == Op::kNack;
    releases += e.h.op == Op::kRelease;
  }
  ORACLE_CHECK(*this, ca.errors == cb.errors + errors, "job errors counter = ERRORs sent");
  ORACLE_CHECK(*this, ca.nacks == cb.nacks + nacks, "job nacks counter = NACKs sent");
  const bool worker_ok = h.worker < jb.t.workers.size();
  const bool resend = worker_ok && r.verdict == Verdict::kReplied && h.op == Op::kClock &&
                      ja.t.workers[h.worker].counters.clock_retransmits !=
                          jb.t.workers[h.worker].counters.clock_retransmits;
  ORACLE_CHECK(*this, ca.releases + (resend ? 1 : 0) == cb.releases + releases,
               "job releases counter = new RELEASEs sent");

  // The membership stage comes first (docs/architecture.md, "The data plane").
  // JOIN: rank in range, no values, and a live rank keeps its binding
  // (rank_in_use). LEAVE is served for a rank that is not live.
  DropReason sender = DropReason::kNone;
  bool predicted = true;  // false: sender ok, a later stage decides
  // Return routability: a JOIN from anything but the rank's live binding
  // must echo its source's cookie first (protocol.md).
  const bool bound_live = worker_ok && jb.t.workers[h.worker].joined &&
                          jb.t.workers[h.worker].live && jb.t.workers[h.worker].addr == req.src;
  if (h.op == Op::kJoin && !bound_live &&
      !dataplane::ValidJoinCookie(kCookieSecret, req.src, h.job, h.worker, req.now,
                                  proto::cookie::Of(h.clock, h.row))) {
    sender = DropReason::kJoinCookie;
  } else if (!worker_ok) {
    sender = DropReason::kBadRank;
  } else if (h.op == Op::kJoin) {
    const dataplane::WorkerTelemetry& w = jb.t.workers[h.worker];
    if (h.count != 0)
      sender = DropReason::kBadCount;
    else if (w.joined && w.live && !(w.addr == req.src))
      sender = DropReason::kRankInUse;
  } else {
    const dataplane::WorkerTelemetry& w = jb.t.workers[h.worker];
    if (!w.joined)
      sender = DropReason::kNotJoined;
    else if (!(w.addr == req.src))
      sender = DropReason::kWrongSource;
    else if (!w.live && h.op != Op::kLeave)
      sender = DropReason::kEvicted;
    else if (h.op != Op::kLeave)
      predicted = false;
    else if (h.count != 0)
      sender = DropReason::kBadCount;
    else if (!w.live && (h.flags & proto::flags::kFinished))
      sender = DropReason::kFinishNotLive;
  }
  if (sender != DropReason::kNone || predicted) {
    ORACLE_CHECK(*this, r.reason == sender,
                 "membership: expected " + std::string(DropReasonName(sender)) + ", got " +
                     std::string(DropReasonName(r.reason)));
  } else {
    ORACLE_CHECK(*this,
                 !IsSenderReason(r.reason) && r.reason != DropReason::kRankInUse &&
                     r.reason != DropReason::kJoinCookie,
                 "membership refused a good sender: " + std::string(DropReasonName(r.reason)));
  }

  // Verdicts per op, and what each emits.
  switch (h.op) {
    case Op::kInc:
      ORACLE_CHECK(*this, r.verdict == Verdict::kApplied || r.verdict == Verdict::kDropped,
                   "INC is applied or dropped");
      break;
    case Op::kJoin:
    case Op::kRead:
    case Op::kLeave:
      ORACLE_CHECK(*this, r.verdict == Verdict::kReplied || r.verdict == Verdict::kRefused,
                   "JOIN/READ/LEAVE is answered or refused");
      break;
    default:
      break;
  }
  if (r.verdict == Verdict::kDropped) {
    ORACLE_CHECK(*this, emitted.empty(), "no reply for a dropped packet");
  }
  if (r.verdict == Verdict::kApplied) {
    // An applied INC that completes a row sends the row to the job's group
    // (CheckEmitted checks what it sends); nothing else.
    const uint64_t completed =
        after.jobs[slot].t.counters.completed_rows - before.jobs[slot].t.counters.completed_rows;
    ORACLE_CHECK(*this, emitted.size() == completed && completed <= 1,
                 "an applied INC emits only the row it completes (" + S(emitted.size()) +
                     " emitted, " + S(completed) + " rows completed)");
  }
  if (r.verdict == Verdict::kRefused) {
    // An unverified source (not the rank's binding, no valid cookie) gets a
    // COOKIE, no larger than the request; everyone else an ERROR.
    const bool unverified = r.reason == DropReason::kJoinCookie ||
                            (h.op != Op::kJoin && (r.reason == DropReason::kBadRank ||
                                                   r.reason == DropReason::kNotJoined ||
                                                   r.reason == DropReason::kWrongSource));
    ORACLE_CHECK(*this,
                 emitted.size() == 1 && emitted[0].h.op == (unverified ? Op::kCookie : Op::kError),
                 unverified ? "an unverified source gets exactly one COOKIE"
                            : "a refused request gets exactly one ERROR");
  }
  if (failed) {
    ORACLE_CHECK(
        *this, Digest(ja, false) == Digest(jb, false),
        "a refused/dropped packet changed the job (" + std::string(DropReasonName(r.reason)) + ")");
  }
  auto count_op = [&](Op op, uint32_t worker) {
    size_t n = 0;
    for (const Emitted& e : emitted) n += e.h.op == op && e.h.worker == worker;
    return n;
  };
  if (r.verdict == Verdict::kReplied) {
    switch (h.op) {
      case Op::kJoin: {
        ORACLE_CHECK(*this, count_op(Op::kJoinAck, h.worker) == 1, "one JOIN_ACK");
        const dataplane::WorkerTelemetry& w = ja.t.workers[h.worker];
        ORACLE_CHECK(*this, w.joined && w.live && w.addr == req.src && w.local == req.local,
                     "JOIN binds both addresses and revives");
        // protocol.md JOIN: a rank that was not live resumes at
        // max(own done, low_all), low_all being the highest completed clock
        // when no rank is live; a live rank's JOIN changes nothing.
        const dataplane::WorkerTelemetry& was = jb.t.workers[h.worker];
        const uint32_t resume =
            !was.live && proto::ClockDiff(jb.t.low, was.done) > 0 ? jb.t.low : was.done;
        ORACLE_CHECK(*this, w.done == resume, "JOIN resumes at max(own done, low_all)");
        break;
      }
      case Op::kRead:
        ORACLE_CHECK(*this, emitted.size() == 1 && emitted[0].h.op == Op::kReadReply,
                     "one READ_REPLY");
        break;
      case Op::kClock:
        ORACLE_CHECK(*this,
                     (emitted.size() == 1 && emitted[0].h.op == Op::kNack) ||
                         (count_op(Op::kRelease, h.worker) == 1 && nacks == 0),
                     "CLOCK answered by a NACK, or by its RELEASE");
        break;
      case Op::kLeave: {
        ORACLE_CHECK(*this, count_op(Op::kLeave, h.worker) == 1, "one LEAVE reply");
        ORACLE_CHECK(*this, !ja.t.workers[h.worker].live, "LEAVE takes the rank out");
        if ((h.flags & proto::flags::kFinished) && !finish_ignored) {
          ORACLE_CHECK(*this, ja.t.finished, "LEAVE with FINISHED ends the job");
        }
        if (finish_ignored) {
          ORACLE_CHECK(*this, ja.t.finished == jb.t.finished, "an ignored FINISHED ends nothing");
        }
        break;
      }
      default:
        ORACLE_CHECK(*this, false, "a served packet of op " + S(static_cast<uint8_t>(h.op)));
    }
  }
  if (r.verdict == Verdict::kWaiting) {
    ORACLE_CHECK(*this, h.op == Op::kClock, "only CLOCK waits");
    ORACLE_CHECK(*this, !jb.t.finished, "a finished job releases every CLOCK at once");
    const dataplane::WorkerTelemetry& w = ja.t.workers[h.worker];
    ORACLE_CHECK(*this, w.waiting && w.done == h.clock, "the waiting rank completed the clock");
    ORACLE_CHECK(*this, count_op(Op::kRelease, h.worker) == 0, "a waiting rank is not released");
  }

  // Exactly-once INC, and the exact sum of what was applied.
  const auto key = std::make_tuple(uint32_t{h.worker}, h.clock, h.row);
  if (h.op == Op::kInc && r.verdict == Verdict::kApplied) {
    ORACLE_CHECK(*this, je.applied.insert(key).second,
                 "INC (rank " + S(h.worker) + ", clock " + S(h.clock) + ", row " + S(h.row) +
                     ") applied twice");
    ORACLE_CHECK(*this, h.row < ja.t.rows && h.count == je.config.RowLength(h.row),
                 "applied INC has the row's length");
    JobExpect::Inc inc{h.clock, h.row, {}};
    for (size_t i = 0; i < h.count; ++i) {
      inc.values.push_back(pkt.Value(i));
      je.sum[size_t{h.row} * je.config.row_width + i] += pkt.Value(i);
    }
    je.incs.push_back(std::move(inc));
  }
  if (r.reason == DropReason::kIncDuplicate) {
    ORACLE_CHECK(*this, je.applied.count(key) == 1, "INC dropped as a duplicate was never applied");
  }
  CheckEmitted(slot, after, emitted, &req);
}

void Oracle::AfterControl(size_t slot, const Snapshot& before, const Snapshot& after,
                          const dataplane::Output& out) {
  const std::vector<Emitted> emitted = DecodeAll(out);
  ORACLE_CHECK(*this, after.g.packets == before.g.packets && Globals(after.g) == Globals(before.g),
               "control operations count no packet");
  const size_t other = 1 - slot;
  ORACLE_CHECK(*this, Digest(after.jobs[other], true) == Digest(before.jobs[other], true),
               "a control operation on one job changed the other");
  if (!after.jobs[slot].exists || !before.jobs[slot].exists) {
    ORACLE_CHECK(*this, emitted.empty(), "no packet from a job that does not exist");
    return;
  }
  const dataplane::JobCounters& cb = before.jobs[slot].t.counters;
  const dataplane::JobCounters& ca = after.jobs[slot].t.counters;
  ORACLE_CHECK(*this,
               ca.rx_by_op == cb.rx_by_op && ca.drops == cb.drops && ca.errors == cb.errors &&
                   ca.nacks == cb.nacks,
               "control operations count no packet on the job");
  for (const Emitted& e : emitted) {
    ORACLE_CHECK(*this, e.h.op == Op::kRelease, "control operations emit RELEASEs only");
  }
  ORACLE_CHECK(*this, ca.releases == cb.releases + emitted.size(), "releases counter");
  CheckEmitted(slot, after, emitted, nullptr);
}

void Oracle::CheckState(const Snapshot& before, const Snapshot& after) {
  for (size_t slot = 0; slot < 2; ++slot) {
    if (!after.jobs[slot].exists) continue;
    const JobSnapshot* b =
        before.jobs[slot].exists && before.jobs[slot].generation == after.jobs[slot].generation
            ? &before.jobs[slot]
            : nullptr;
    CheckJobState(slot, b, after.jobs[slot]);
  }
}

void Oracle::CheckJobState(size_t slot, const JobSnapshot* before, const JobSnapshot& after) {
  JobExpect& je = jobs_[slot];
  const dataplane::JobTelemetry& t = after.t;
  const uint32_t n = je.config.workers;
  ORACLE_CHECK(*this, t.workers.size() == n && t.rows == je.config.rows(), "geometry");

  // The barrier summary is what its definition says, over live ranks.
  uint32_t live = 0, low = 0, high = 0, high_all = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const dataplane::WorkerTelemetry& w = t.workers[i];
    if (i == 0 || proto::ClockDiff(w.done, high_all) > 0) high_all = w.done;
    if (!w.live) continue;
    if (live == 0 || proto::ClockDiff(w.done, low) < 0) low = w.done;
    if (live == 0 || proto::ClockDiff(w.done, high) > 0) high = w.done;
    ++live;
  }
  ORACLE_CHECK(*this, t.live_workers == live, "live_workers");
  ORACLE_CHECK(*this, t.low == (live > 0 ? low : high_all), "low = slowest live rank's done");
  ORACLE_CHECK(*this, t.high == (live > 0 ? high : high_all), "high = fastest live rank's done");

  for (uint32_t i = 0; i < n; ++i) {
    const dataplane::WorkerTelemetry& w = t.workers[i];
    const std::string rank = "rank " + S(i);
    ORACLE_CHECK(*this, w.rank == i, rank);
    ORACLE_CHECK(*this, !w.waiting || w.live, rank + ": only live ranks wait");
    ORACLE_CHECK(*this, !(w.waiting && t.finished), rank + ": waits in a finished job");
    // Liveness: the slowest live rank is always eligible, so never left waiting;
    // and every waiting rank was re-evaluated: none is eligible any more.
    ORACLE_CHECK(*this, !(w.live && w.waiting && w.done == t.low),
                 rank + " is the slowest live rank and is stranded waiting");
    if (w.waiting) {
      const uint32_t e = t.swap_pending && proto::ClockDiff(w.done, t.swap_clock) >= 0
                             ? t.next_epoch
                             : t.active_epoch;
      auto p = je.params_of_epoch.find(e);
      ORACLE_CHECK(
          *this, p != je.params_of_epoch.end() && !Ineligible(t, p->second, w.done).empty(),
          rank + " waits for clock " + S(w.done) + " although the bank in force lets it go");
    }
    size_t rows = 0, incs = 0;
    for (const auto& [rk, clock, row] : je.applied) {
      if (rk != i) continue;
      ++incs;
      rows += clock == w.done + 1;
    }
    ORACLE_CHECK(*this, w.counters.incs_applied == incs, rank + ": incs_applied");
    ORACLE_CHECK(*this, w.rows_this_clock == (w.waiting ? 0 : rows),
                 rank + ": rows_this_clock " + S(w.rows_this_clock) + ", applied " + S(rows));
  }

  // The model is the exact sum of every applied INC while nothing saturated.
  ORACLE_CHECK(*this, after.model.size() == je.config.elements, "model size");
  ORACLE_CHECK(*this, t.saturated == (t.counters.saturations > 0), "saturated iff clamps counted");
  if (!t.saturated) {
    for (size_t i = 0; i < after.model.size(); ++i) {
      ORACLE_CHECK(*this, after.model[i] == Clamp32(je.sum[i]),
                   "element " + S(i) + ": model " + std::to_string(after.model[i]) +
                       ", exact sum of applied INCs " + std::to_string(je.sum[i]));
    }
  }

  // Policy banks hold what was installed.
  auto epoch = je.params_of_epoch.find(t.active_epoch);
  ORACLE_CHECK(*this, epoch != je.params_of_epoch.end() && epoch->second == t.active,
               "the active bank is the policy installed as epoch " + S(t.active_epoch));
  if (t.swap_pending) {
    auto next = je.params_of_epoch.find(t.next_epoch);
    ORACLE_CHECK(
        *this,
        next != je.params_of_epoch.end() && next->second == t.next && t.next_epoch > t.active_epoch,
        "the pending bank is the policy installed as epoch " + S(t.next_epoch));
  }

  if (before == nullptr) return;
  const dataplane::JobTelemetry& tb = before->t;
  for (uint32_t i = 0; i < n; ++i) {
    ORACLE_CHECK(*this, proto::ClockDiff(t.workers[i].done, tb.workers[i].done) >= 0,
                 "rank " + S(i) + "'s done went back from " + S(tb.workers[i].done) + " to " +
                     S(t.workers[i].done));
  }
  ORACLE_CHECK(*this, proto::ClockDiff(t.max_released, tb.max_released) >= 0,
               "max_released went back");
  ORACLE_CHECK(*this, t.active_epoch >= tb.active_epoch, "active epoch went back");
  ORACLE_CHECK(*this, t.saturated >= tb.saturated && t.finished >= tb.finished,
               "saturated/finished cleared");
}

}  // namespace serene::fuzz
