// pipeline_fuzzer: a sequence of actions (packets, time, control operations)
// against a real dataplane::Pipeline with one or two jobs, checked by the
// Oracle after every action. The input format is in pipeline_actions.h, the
// invariants in pipeline_oracle.h and docs/fuzzing.md.
//
// Set SERENE_FUZZ_TRACE=1 to print every action and verdict to stderr (for
// reading a crash input: ./pipeline_fuzzer crash-...).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "dataplane/policy_banks.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/pipeline_actions.h"
#include "fuzz/pipeline_oracle.h"

namespace serene::fuzz {
namespace {

using dataplane::Output;
using dataplane::ProcessResult;
using proto::Op;

constexpr const char* kActionNames[] = {"join",
                                        "read",
                                        "inc",
                                        "clock",
                                        "leave",
                                        "step",
                                        "raw-op",
                                        "garbage",
                                        "mutate",
                                        "advance",
                                        "set-policy",
                                        "evict",
                                        "evict-if-silent",
                                        "finish",
                                        "recreate",
                                        "telemetry"};

bool Tracing() {
  static const bool on = std::getenv("SERENE_FUZZ_TRACE") != nullptr;
  return on;
}

Output& Out() {
  static Output out = Output::ForBatch(1);
  return out;
}

// One Pipeline for the whole process: building and destroying its 65536-entry
// job table per input would cost more than the input itself. Every run
// deletes its jobs at the end, so each input starts from an empty pipeline;
// only the global counters and the incarnation numbers carry over, and the
// oracle reads counters as differences and incarnations per job.
dataplane::Pipeline& SharedPipeline() {
  static dataplane::Pipeline pipeline(0x5E4E4E);
  return pipeline;
}

class Run {
 public:
  Run(const uint8_t* data, size_t size) : in_(data, size), oracle_(&pipeline_) {}
  ~Run() {
    for (const FuzzJob& j : kJobs) (void)pipeline_.DeleteJob(j.id);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void Go() {
    const uint8_t setup = in_.U8();
    Create(0, setup & 7);
    if (setup & 0x08) Create(1, static_cast<uint8_t>(setup >> 4));
    for (size_t i = 0; i < kMaxActions && !in_.empty(); ++i) {
      const uint8_t kind = in_.U8();
      const Action a = static_cast<Action>(kind & 0x0F);
      const size_t slot = (kind & kJobBBit) ? 1 : 0;
      oracle_.SetContext(i, kActionNames[kind & 0x0F]);
      if (Tracing()) std::fprintf(stderr, "#%zu %s job %zu\n", i, kActionNames[kind & 0x0F], slot);
      Do(a, slot);
    }
  }

 private:
  void Create(size_t slot, uint8_t policy) {
    const dataplane::JobConfig c = ConfigOf(slot, policy);
    const Status s = pipeline_.CreateJob(c);
    ORACLE_CHECK(oracle_, s.ok(), "CreateJob: " + s.message());
    oracle_.Created(slot, c);
  }

  const dataplane::JobConfig& Config(size_t slot) const { return oracle_.expect(slot).config; }
  bool Exists(size_t slot) const { return oracle_.expect(slot).exists; }

  static proto::Endpoint Addr(size_t slot, uint32_t rank) {
    proto::Endpoint e;
    e.family = proto::Endpoint::Family::kIPv4;
    e.addr = {127, 0, 0, 1};
    e.port = static_cast<uint16_t>(40000 + 16 * slot + rank);
    return e;
  }

  // Source address chosen by the mods byte.
  static proto::Endpoint SourceOf(size_t slot, uint16_t worker, uint8_t m) {
    switch ((m >> mods::kAddrShift) & 3) {
      case 2:
        return Addr(slot, (worker + 1u) % 4);  // another rank's
      case 3: {                                // a stranger
        proto::Endpoint e = Addr(slot, worker);
        if (worker & 1) {
          e.family = proto::Endpoint::Family::kIPv6;
          e.addr = {};
          e.addr[15] = 1;
        } else {
          e.addr[3] = 2;
        }
        return e;
      }
      default:
        return Addr(slot, worker);
    }
  }

  uint16_t RankOf(uint8_t b, size_t slot) const {
    if (b >= 0xF8) return static_cast<uint16_t>(0xFF00 | b);
    return static_cast<uint16_t>(b % (Config(slot).workers + 1));
  }

  // The rank's telemetry before the action (nullptr: no such job or rank).
  const dataplane::WorkerTelemetry* Worker(const Snapshot& s, size_t slot, uint16_t rank) const {
    if (!s.jobs[slot].exists || rank >= s.jobs[slot].t.workers.size()) return nullptr;
    return &s.jobs[slot].t.workers[rank];
  }

  uint32_t ClockOf(uint8_t sel, const dataplane::WorkerTelemetry* w) {
    const uint32_t d = w != nullptr ? w->done : proto::kNoClock;
    switch (sel & 15) {
      case 10:
        return d;
      case 11:
        return d + 2;
      case 12:
        return d - 1;
      case 13:
        return 0;
      case 14:
        return proto::kNoClock;
      case 15:
        return in_.U32();
      default:
        return d + 1;
    }
  }

  uint32_t RowOf(uint8_t sel, size_t slot) {
    const uint32_t rows = Config(slot).rows();
    switch (sel & 7) {
      case 6:
        return rows;
      case 7:
        return in_.U32();
      default:
        return sel % rows;
    }
  }

  std::vector<uint8_t> Build(size_t slot, Op op, uint16_t worker, uint8_t m, uint32_t clock,
                             uint32_t row, std::vector<int32_t> values, uint16_t flags = 0) {
    proto::Header h;
    h.op = op;
    h.job = Config(slot).id;
    h.key = Config(slot).key;
    switch (m & mods::kFaultMask) {
      case mods::kWrongKey:
        h.key ^= 0x5A5A5A5Au;
        break;
      case mods::kUnknownJob:
        h.job = kUnknownJobId;
        break;
      case mods::kOtherJobsId:
        h.job = kJobs[1 - slot].id;
        break;
      default:
        break;
    }
    h.worker = worker;
    h.clock = clock;
    h.row = row;
    h.flags = flags;
    if (m & mods::kRetransmit) h.flags |= proto::flags::kRetransmit;
    if (m & mods::kReservedFlags) h.flags |= 0xFFC0;
    if (m & mods::kExtraValue) values.push_back(7);
    std::vector<uint8_t> d(proto::PacketSize(values.size()));
    proto::Encode(h, values, d.data());
    return d;
  }

  ProcessResult Send(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                     const proto::Endpoint& local) {
    const Snapshot before = oracle_.Take();
    Output& out = Out();
    out.Clear();
    const ProcessResult r = local.valid() ? pipeline_.Process(datagram, src, local, now_, &out)
                                          : pipeline_.Process(datagram, src, now_, &out);
    if (Tracing()) {
      proto::PacketView v;
      if (proto::Decode(datagram.data(), datagram.size(), &v) == proto::ParseError::kOk) {
        std::fprintf(stderr, "  %s job %u worker %u clock %u row %u count %u flags 0x%x port %u",
                     std::string(proto::OpName(v.header.op)).c_str(), v.header.job, v.header.worker,
                     v.header.clock, v.header.row, v.header.count, v.header.flags, src.port);
      } else {
        std::fprintf(stderr, "  %zu bytes", datagram.size());
      }
      std::fprintf(stderr, " -> verdict %d %s, %zu emitted\n", static_cast<int>(r.verdict),
                   std::string(dataplane::DropReasonName(r.reason)).c_str(), out.size());
    }
    const Snapshot after = oracle_.Take();
    oracle_.AfterPacket(before, after, datagram, src, local, now_, r, out);
    oracle_.CheckState(before, after);
    return r;
  }

  std::vector<int32_t> Values(size_t n) {
    std::vector<int32_t> v(n);
    for (int32_t& x : v) x = ValueOf(in_.U8());
    return v;
  }

  void Do(Action a, size_t slot) {
    const Snapshot before = oracle_.Take();
    switch (a) {
      case Action::kJoin:
      case Action::kRead:
      case Action::kInc:
      case Action::kClock:
      case Action::kLeave:
        return DoRequest(a, slot, before);
      case Action::kStep:
        return DoStep(slot, before);
      case Action::kRawOp:
      case Action::kMutate: {
        const uint8_t op = in_.U8(), m = in_.U8();
        const uint16_t worker = in_.U16();
        const proto::Endpoint local = LocalOf(static_cast<uint8_t>(worker));
        const uint32_t clock = in_.U32(), row = in_.U32();
        const uint16_t flags = in_.U16();
        std::vector<int32_t> values = Values(in_.U8() & 7);
        std::vector<uint8_t> d =
            Build(slot, static_cast<Op>(op), worker, m, clock, row, std::move(values), flags);
        if (a == Action::kMutate) {
          const size_t pos = in_.U8() % d.size();
          const uint8_t x = in_.U8();
          if (x == 0)
            d.resize(pos);
          else
            d[pos] ^= x;
        }
        Send(d, SourceOf(slot, worker, m), local);
        return;
      }
      case Action::kGarbage: {
        auto bytes = in_.Bytes(in_.U8());
        std::vector<uint8_t> d(bytes.begin(), bytes.end());  // exactly sized for ASan
        Send(d, Addr(slot, 0), LocalOf(0));
        return;
      }
      case Action::kAdvance: {
        const uint16_t d = in_.U16();
        if (d >= 0xF000)
          now_ -= std::min<uint64_t>(now_, uint64_t{d & 0xFFFu} * 1'000'000);
        else
          now_ += uint64_t{d} * 100'000;
        return;
      }
      default:
        return DoControl(a, slot, before);
    }
  }

  // CancelPolicyChange: succeeds iff a change is pending, the epoch (given
  // when eff >= 0x80, sometimes a wrong one) is its epoch, and no rank has
  // completed its swap clock nor been released from it (policy_banks.h).
  void DoCancel(size_t slot, const JobSnapshot& jb, uint8_t eff, Output* out) {
    const uint16_t id = kJobs[slot].id;
    std::optional<uint32_t> epoch;
    if (eff >= 0x80 && jb.exists) epoch = jb.t.next_epoch + (eff & 1);
    auto cancelled = pipeline_.CancelPolicyChange(id, epoch, now_, out);
    bool reached = false;
    if (jb.exists && jb.t.swap_pending) {
      auto at_or_after = [&](uint32_t c) {
        return c != proto::kNoClock && proto::ClockDiff(c, jb.t.swap_clock) >= 0;
      };
      reached = at_or_after(jb.t.max_released);
      for (const auto& w : jb.t.workers) reached = reached || at_or_after(w.done);
    }
    const bool ok =
        jb.exists && jb.t.swap_pending && (!epoch || *epoch == jb.t.next_epoch) && !reached;
    ORACLE_CHECK(oracle_, cancelled.ok() == ok,
                 std::string("CancelPolicyChange ") +
                     (cancelled.ok() ? std::string("accepted") : cancelled.status().message()));
    if (ok) {
      ORACLE_CHECK(
          oracle_,
          cancelled->epoch == jb.t.next_epoch && cancelled->effective_clock == jb.t.swap_clock,
          "CancelPolicyChange returns the pending change");
      ORACLE_CHECK(oracle_, out->size() == 0, "CancelPolicyChange released nobody");
      oracle_.PolicyCancelled(slot, cancelled->epoch);
    }
  }

  void DoRequest(Action a, size_t slot, const Snapshot& before) {
    const uint8_t rank_byte = in_.U8();
    const uint16_t worker = RankOf(rank_byte, slot);
    const uint8_t m = in_.U8();
    const dataplane::WorkerTelemetry* w = Worker(before, slot, worker);
    std::vector<uint8_t> d;
    switch (a) {
      case Action::kJoin:
        d = Build(slot, Op::kJoin, worker, m, 0, 0, {});
        break;
      case Action::kLeave: {
        const uint16_t flags = (in_.U8() & 1) ? proto::flags::kFinished : 0;
        d = Build(slot, Op::kLeave, worker, m, w ? w->done + 1 : 0, 0, {}, flags);
        break;
      }
      case Action::kRead: {
        const uint8_t sel = in_.U8();
        const uint32_t clock = ClockOf(sel, w);
        const uint16_t flags = (sel & kReadGroupBit) ? proto::flags::kGroup : 0;
        d = Build(slot, Op::kRead, worker, m, clock, RowOf(in_.U8(), slot), {}, flags);
        break;
      }
      case Action::kInc: {
        const uint32_t clock = ClockOf(in_.U8(), w);
        const uint32_t row = RowOf(in_.U8(), slot);
        const dataplane::JobConfig& c = Config(slot);
        const uint32_t n = row < c.rows() ? c.RowLength(row) : c.row_width;
        d = Build(slot, Op::kInc, worker, m, clock, row, Values(n));
        break;
      }
      default: {  // kClock
        const uint32_t clock = ClockOf(in_.U8(), w);
        const uint8_t sel = in_.U8();
        const uint32_t rows = Config(slot).rows();
        uint32_t n = w != nullptr ? w->rows_this_clock : 0;
        if ((sel & 7) == 5) n = rows;
        if ((sel & 7) == 6) n = rows + 1;
        if ((sel & 7) == 7) n = in_.U32();
        d = Build(slot, Op::kClock, worker, m, clock, n, {});
        break;
      }
    }
    const ProcessResult r = Send(d, SourceOf(slot, worker, m), LocalOf(rank_byte));
    // A JOIN answered with a COOKIE is sent again echoing it, as a worker
    // does (docs/protocol.md, "Return routability"), so ranks get bound.
    if (a == Action::kJoin && r.reason == dataplane::DropReason::kJoinCookie && Out().size() == 1) {
      proto::PacketView c;
      const auto bytes = Out().bytes(0);
      if (proto::Decode(bytes.data(), bytes.size(), &c) == proto::ParseError::kOk &&
          c.header.op == Op::kCookie) {
        d = Build(slot, Op::kJoin, worker, m, c.header.clock, c.header.row, {});
        Send(d, SourceOf(slot, worker, m), LocalOf(rank_byte));
      }
    }
  }

  // A well-behaved step: INC every row at the rank's current clock (rank 0
  // only at clock 0), then CLOCK. Gets deep states from few input bytes.
  void DoStep(size_t slot, const Snapshot& before) {
    const uint8_t rank_byte = in_.U8();
    const uint16_t worker = RankOf(rank_byte, slot);
    const proto::Endpoint local = LocalOf(rank_byte);
    const int32_t value = ValueOf(in_.U8());
    const dataplane::WorkerTelemetry* w = Worker(before, slot, worker);
    if (w == nullptr) return;
    const dataplane::JobConfig& c = Config(slot);
    const uint32_t clock = w->done + 1;
    uint32_t sent = 0;
    if (clock != 0 || worker == 0) {
      for (uint32_t r = 0; r < c.rows(); ++r, ++sent) {
        Send(
            Build(slot, Op::kInc, worker, 0, clock, r, std::vector<int32_t>(c.RowLength(r), value)),
            Addr(slot, worker), local);
      }
    }
    Send(Build(slot, Op::kClock, worker, 0, clock, sent, {}), Addr(slot, worker), local);
  }

  void DoControl(Action a, size_t slot, const Snapshot& before) {
    const JobSnapshot& jb = before.jobs[slot];
    const uint16_t id = Config(slot).id;
    Output& out = Out();
    out.Clear();
    uint16_t evicted_rank = 0xFFFF;
    switch (a) {
      case Action::kSetPolicy: {
        const uint8_t sel = in_.U8(), eff = in_.U8();
        if (sel >= 0xE0 && sel < 0xF0) {  // CancelPolicyChange
          DoCancel(slot, jb, eff, &out);
          break;
        }
        dataplane::BarrierParams p = PolicyOf(sel);
        if (sel >= 0xF0) {  // a raw rule; quorum 0 is invalid
          auto bound = [](uint8_t b) { return b == 0xFF ? 0xFFFFFFFFu : uint32_t{b}; };
          p = {bound(in_.U8()), bound(in_.U8()), bound(in_.U8())};
        }
        std::optional<uint32_t> x;
        const uint32_t earliest = jb.exists ? jb.t.max_released + 1 : 0;
        if (eff >= 0xC0)
          x = in_.U32();
        else if (eff >= 0x80)
          x = earliest + (eff & 7) - 2;
        auto change = pipeline_.SetPolicy(id, p, x, now_, &out);
        bool ok = jb.exists && p.quorum != 0 && !jb.t.swap_pending &&
                  (!x || (proto::ClockDiff(*x, earliest) >= 0 &&
                          proto::ClockDiff(*x, earliest) <= dataplane::kSwapHorizon));
        ORACLE_CHECK(oracle_, change.ok() == ok,
                     "SetPolicy(" + p.ToString() + ") " +
                         (change.ok() ? std::string("accepted") : change.status().message()));
        if (ok) {
          ORACLE_CHECK(oracle_, change->effective_clock == x.value_or(earliest),
                       "SetPolicy's effective clock");
          oracle_.PolicyInstalled(slot, change->epoch, p);
        }
        break;
      }
      case Action::kEvict: {
        const uint16_t rank = RankOf(in_.U8(), slot);
        bool was_live = false;
        const Status s = pipeline_.Evict(id, rank, now_, &out, &was_live);
        evicted_rank = rank;
        const auto* w = Worker(before, slot, rank);
        ORACLE_CHECK(oracle_, s.ok() == (w != nullptr), "Evict: " + s.message());
        if (w != nullptr) ORACLE_CHECK(oracle_, was_live == w->live, "Evict's was_live");
        break;
      }
      case Action::kEvictIfSilent: {
        const uint16_t rank = RankOf(in_.U8(), slot);
        const uint64_t silent = uint64_t{in_.U8()} * 10'000'000;
        auto evicted = pipeline_.EvictIfSilent(id, rank, silent, now_, &out);
        ORACLE_CHECK(oracle_, evicted.ok() == jb.exists, "EvictIfSilent status");
        if (!jb.exists) break;
        const auto* w = Worker(before, slot, rank);
        const bool want = w != nullptr && w->live && w->joined && !jb.t.finished &&
                          dataplane::Elapsed(w->last_seen, now_) >= silent;
        ORACLE_CHECK(oracle_, *evicted == want, "EvictIfSilent evicts a live, joined, silent rank");
        if (want) evicted_rank = rank;
        break;
      }
      case Action::kFinish: {
        const Status s = pipeline_.Finish(id, now_, &out);
        ORACLE_CHECK(oracle_, s.ok() == jb.exists, "Finish: " + s.message());
        break;
      }
      case Action::kRecreate: {
        const uint8_t policy = in_.U8();
        const Status s = pipeline_.DeleteJob(id);
        ORACLE_CHECK(oracle_, s.ok() == jb.exists, "DeleteJob: " + s.message());
        oracle_.Deleted(slot);
        Create(slot, policy);
        break;
      }
      default: {  // kTelemetry (JobIds is left out: it scans the 65536-entry table)
        ORACLE_CHECK(oracle_, !pipeline_.Telemetry(kUnknownJobId).ok(), "unknown job's telemetry");
        break;
      }
    }
    const Snapshot after = oracle_.Take();
    if (a == Action::kRecreate) {
      CheckFresh(after.jobs[slot]);
    } else {
      oracle_.AfterControl(slot, before, after, out);
    }
    oracle_.CheckState(before, after);
    if (a == Action::kFinish && jb.exists) {
      ORACLE_CHECK(oracle_, after.jobs[slot].t.finished, "Finish ends the job");
    }
    if (evicted_rank < Config(slot).workers && jb.exists) {
      ORACLE_CHECK(oracle_, !after.jobs[slot].t.workers[evicted_rank].live,
                   "an evicted rank is not live");
    }
  }

  void CheckFresh(const JobSnapshot& j) {
    ORACLE_CHECK(oracle_, j.exists && !j.t.saturated && !j.t.finished && !j.t.swap_pending,
                 "a created job starts fresh");
    for (const auto& w : j.t.workers) {
      ORACLE_CHECK(oracle_, w.done == proto::kNoClock && !w.joined && w.live && !w.waiting,
                   "a created job's ranks start fresh");
    }
    for (int32_t v : j.model) ORACLE_CHECK(oracle_, v == 0, "a created job's model is 0");
  }

  FuzzInput in_;
  dataplane::Pipeline& pipeline_ = SharedPipeline();
  Oracle oracle_;
  dataplane::Timestamp now_ = 1'000'000'000;
};

}  // namespace
}  // namespace serene::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  serene::fuzz::Run(data, size).Go();
  return 0;
}
