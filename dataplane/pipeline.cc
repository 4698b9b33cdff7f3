#include "dataplane/pipeline.h"

#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>

#include "dataplane/aggregation_table.h"
#include "dataplane/barrier.h"
#include "dataplane/job_state.h"
#include "dataplane/membership.h"
#include "dataplane/policy_banks.h"
#include "dataplane/requests.h"
#include "dataplane/row_ops.h"

namespace serene::dataplane {
namespace {

// SplitMix64's finalizer: spreads (seed, creation, id) over 32 bits.
uint32_t Incarnation(uint64_t seed, uint64_t creation, uint16_t id) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (creation + 1) + id;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<uint32_t>(x) | 1u;  // never 0: 0 reads as "not told"
}

// Bytes as MiB: what is needed rounded up (1 byte needs 1 MiB, not 0), what
// there is rounded down, so that a refusal never reads "needs 38, only 38".
std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }
std::string MiBDown(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

Status NoJob(uint16_t job) {
  return Status::NotFound("job " + std::to_string(job) + " does not exist");
}

}  // namespace

Pipeline::Pipeline(uint64_t incarnation_seed, const CookieSecret& cookie_secret,
                   const MemoryBudgetSource* memory)
    : jobs_(65536),
      memory_(memory),
      creating_(65536, false),
      incarnation_seed_(incarnation_seed),
      cookie_secret_(cookie_secret) {}
Pipeline::~Pipeline() = default;

std::shared_ptr<JobState> Pipeline::Find(uint16_t job) const {
  std::shared_lock lock(table_mu_);
  return jobs_[job];
}

ProcessResult Pipeline::Process(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                                const proto::Endpoint& local, Timestamp now, Output* out) {
  Burst burst(*this);
  return burst.Process(datagram, src, local, now, out);
}

ProcessResult Pipeline::Burst::Process(std::span<const uint8_t> datagram,
                                       const proto::Endpoint& src, const proto::Endpoint& local,
                                       Timestamp now, Output* out) {
  ++packets_;
  AtomicGlobals& globals = p_.globals_;

  // Parse: magic, version, op and length before anything touches state.
  proto::PacketView pkt;
  const proto::ParseError err = proto::Decode(datagram.data(), datagram.size(), &pkt);
  if (err != proto::ParseError::kOk) {
    globals.parse_errors[static_cast<size_t>(err)].fetch_add(1, std::memory_order_relaxed);
    return {Verdict::kDropped, DropReason::kParse, err};
  }
  const proto::Header& h = pkt.header;
  if (!proto::IsRequest(h.op)) {
    globals.not_request.fetch_add(1, std::memory_order_relaxed);
    return {Verdict::kDropped, DropReason::kNotRequest};
  }
  // Authentication — the key and the source allow-list — before any lock on
  // the job and any state: strangers get no reply, and a flood of packets
  // with a wrong key costs the job's own traffic nothing, neither its lock
  // nor a burst's hold on it. INC and READ of different rows run in parallel
  // (shared lock, then the row's stripe in the handler); everything else has
  // the job to itself.
  const bool shared = h.op == proto::Op::kInc || h.op == proto::Op::kRead;
  if (held_ != nullptr && held_->config.id == h.job) {
    const DropReason denied = p_.Authenticate(*held_, h, src);
    if (denied != DropReason::kNone) return {Verdict::kDropped, denied};
    if (shared && !held_->mu.writer_waiting()) {
      return p_.ProcessLocked(*held_, &tally_, pkt, src, local, now, out);
    }
    ProcessResult challenged;
    if (h.op == proto::Op::kJoin && !held_->mu.writer_waiting() &&
        !JoinEchoesCookie(*held_, h, src, now) &&
        ChallengeJoin(*held_, pkt, src, local, now, tally_, out, &challenged)) {
      return challenged;
    }
  }
  // Job lookup (an exact match on the job id) and authentication under the
  // table's lock: a packet that fails takes no reference to the job either
  // (its count shares a cache line with the job's configuration, which
  // every packet of the job reads).
  std::shared_ptr<JobState> job;
  {
    std::shared_lock lock(p_.table_mu_);
    JobState* found = p_.jobs_[h.job].get();
    if (found == nullptr) {
      globals.unknown_job.fetch_add(1, std::memory_order_relaxed);
      return {Verdict::kDropped, DropReason::kUnknownJob};
    }
    if (found != held_.get()) {  // (the held job's packet was authenticated above)
      const DropReason denied = p_.Authenticate(*found, h, src);
      if (denied != DropReason::kNone) return {Verdict::kDropped, denied};
    }
    job = p_.jobs_[h.job];
  }
  if (held_ != nullptr) Release();
  if (shared) {
    job->mu.lock_shared();
    held_ = std::move(job);
    return p_.ProcessLocked(*held_, &tally_, pkt, src, local, now, out);
  }
  // A JOIN without a valid cookie (the cookie reads only the job's fixed
  // secret: no lock) is most likely answered with a COOKIE, which changes
  // nothing: under the shared lock, held for the burst like an INC's. Only
  // a rank's own live address re-JOINs without one; that JOIN goes on.
  if (h.op == proto::Op::kJoin && !JoinEchoesCookie(*job, h, src, now)) {
    job->mu.lock_shared();
    held_ = job;
    ProcessResult challenged;
    if (ChallengeJoin(*held_, pkt, src, local, now, tally_, out, &challenged)) return challenged;
    Release();
  }
  std::lock_guard lock(job->mu);
  return p_.ProcessLocked(*job, /*shared=*/nullptr, pkt, src, local, now, out);
}

void Pipeline::Burst::Release() {
  tally_.AddTo(*held_);
  held_->mu.unlock_shared();
  held_.reset();
}

void Pipeline::Burst::End() {
  if (held_ != nullptr) Release();
  if (packets_ > 0) p_.globals_.packets.fetch_add(packets_, std::memory_order_relaxed);
  packets_ = 0;
}

DropReason Pipeline::Authenticate(JobState& job, const proto::Header& h,
                                  const proto::Endpoint& src) {
  // Both read only the job's configuration, fixed at its creation; the drop
  // counters are atomic.
  if (h.key != job.config.key) {
    globals_.bad_key.fetch_add(1, std::memory_order_relaxed);
    ++job.counters.drops[static_cast<size_t>(DropReason::kBadKey)];
    return DropReason::kBadKey;
  }
  // Source filter: the job's allow-list (at most kMaxAllowPrefixes prefixes;
  // empty = any source). A packet from elsewhere is dropped silently, before
  // any stage reads or writes the job's registers.
  if (!job.config.allow.Allows(src)) {
    ++job.counters.drops[static_cast<size_t>(DropReason::kSourceNotAllowed)];
    return DropReason::kSourceNotAllowed;
  }
  return DropReason::kNone;
}

ProcessResult Pipeline::ProcessLocked(JobState& job, SharedTally* shared,
                                      const proto::PacketView& pkt, const proto::Endpoint& src,
                                      const proto::Endpoint& local, Timestamp now, Output* out) {
  const proto::Header& h = pkt.header;
  if (shared != nullptr) {
    shared->CountRx(h.op);
  } else {
    job.counters.rx_by_op[static_cast<size_t>(h.op)].AddExclusive(1);
  }

  // Per-op stages: membership, aggregation table, barrier.
  switch (h.op) {
    case proto::Op::kJoin: return HandleJoin(job, pkt, src, local, now, out);
    case proto::Op::kRead: return HandleRead(job, pkt, src, local, now, out);
    case proto::Op::kInc: return HandleInc(job, pkt, src, local, now, *shared, out);
    case proto::Op::kClock: return HandleClock(job, pkt, src, local, now, out);
    case proto::Op::kLeave: return HandleLeave(job, pkt, src, local, now, out);
    default: break;
  }
  return {Verdict::kDropped, DropReason::kNotRequest};
}

Status Pipeline::CreateJob(const JobConfig& config) {
  Status s = config.Validate();
  if (!s.ok()) return s;
  const uint64_t bytes = JobStateBytes(config);
  s = Reserve(config, bytes);
  if (!s.ok()) return s;
  // Allocate and zero outside every lock: a large model takes a while.
  std::shared_ptr<JobState> state;
  try {
    state = std::make_shared<JobState>(
        config, Incarnation(incarnation_seed_, creations_.fetch_add(1), config.id),
        cookie_secret_);
  } catch (const std::bad_alloc&) {
    Unreserve(config.id, bytes);
    return Status::ResourceExhausted("job " + std::to_string(config.id) + " needs " + MiB(bytes) +
                                     " of registers and they cannot be allocated; use fewer "
                                     "elements or workers");
  }
  std::lock_guard admit(admit_mu_);
  std::unique_lock lock(table_mu_);
  jobs_[config.id] = std::move(state);
  ++job_count_;
  creating_[config.id] = false;
  --creating_count_;
  reserved_bytes_ -= bytes;
  return Status::Ok();
}

Status Pipeline::Reserve(const JobConfig& config, uint64_t bytes) {
  const std::string job = "job " + std::to_string(config.id);
  std::lock_guard admit(admit_mu_);
  {
    std::shared_lock lock(table_mu_);
    if (jobs_[config.id] != nullptr) return Status::AlreadyExists(job + " already exists");
    if (creating_[config.id]) {
      return Status::AlreadyExists(job + " is being created by another call");
    }
    if (job_count_ + creating_count_ >= kMaxJobs) {
      return Status::FailedPrecondition(
          "too many jobs: the switch holds at most " + std::to_string(kMaxJobs) + " (" +
          std::to_string(job_count_) + " created, " + std::to_string(creating_count_) +
          " being created); delete a job first");
    }
  }
  if (memory_ != nullptr) {
    // Read under admit_mu_: a job installed since was allocated before this
    // reading (the budget sees it), one not yet installed is in
    // reserved_bytes_. So concurrent creations never share the same bytes.
    if (std::optional<MemoryBudget> budget = memory_->Read()) {
      const uint64_t free =
          budget->available > reserved_bytes_ ? budget->available - reserved_bytes_ : 0;
      if (bytes > free) {
        std::string msg = job + " (workers=" + std::to_string(config.workers) +
                          ", elements=" + std::to_string(config.elements) +
                          ", row=" + std::to_string(config.row_width) + ") needs " + MiB(bytes) +
                          " of switch memory but only " + MiBDown(free) +
                          " can be given to it: " + budget->source;
        if (reserved_bytes_ > 0) {
          msg += ", less " + MiB(reserved_bytes_) + " reserved by " +
                 std::to_string(creating_count_) + " job(s) being created";
        }
        msg += "; use fewer elements or workers, or a larger row width";
        if (!budget->remedy.empty()) msg += ", or " + budget->remedy;
        return Status::ResourceExhausted(msg);
      }
    }
  }
  creating_[config.id] = true;
  ++creating_count_;
  reserved_bytes_ += bytes;
  return Status::Ok();
}

void Pipeline::Unreserve(uint16_t job, uint64_t bytes) {
  std::lock_guard admit(admit_mu_);
  creating_[job] = false;
  --creating_count_;
  reserved_bytes_ -= bytes;
}

Status Pipeline::DeleteJob(uint16_t job) {
  std::unique_lock lock(table_mu_);
  if (jobs_[job] == nullptr) return NoJob(job);
  jobs_[job].reset();  // packets in flight keep their shared_ptr until done
  --job_count_;
  return Status::Ok();
}

Result<PolicyChange> Pipeline::SetPolicy(uint16_t job, const BarrierParams& params,
                                         std::optional<uint32_t> effective_clock, Timestamp now,
                                         Output* out) {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  Result<PolicyChange> change = InstallPolicy(*j, params, effective_clock);
  if (!change.ok()) return change;
  // The flip may make waiting ranks eligible (e.g. SYNC -> ASYNC under a straggler).
  ReleaseEligible(*j, now, out);
  return change;
}

Result<PolicyChange> Pipeline::CancelPolicyChange(uint16_t job, std::optional<uint32_t> epoch,
                                                  Timestamp now, Output* out) {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  Result<PolicyChange> cancelled = CancelPolicy(*j, epoch);
  if (!cancelled.ok()) return cancelled;
  // Rebuilds the barrier index, which a pending change invalidates.
  ReleaseEligible(*j, now, out);
  return cancelled;
}

Status Pipeline::Evict(uint16_t job, uint16_t worker, Timestamp now, Output* out,
                       bool* was_live) {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  if (worker >= j->workers.size()) {
    return Status::InvalidArgument("rank " + std::to_string(worker) + ": job " +
                                   std::to_string(job) + " has ranks 0.." +
                                   std::to_string(j->workers.size() - 1));
  }
  if (was_live != nullptr) *was_live = j->workers[worker].live;
  RemoveFromBarrier(*j, worker, now, out);
  return Status::Ok();
}

Result<bool> Pipeline::EvictIfSilent(uint16_t job, uint16_t worker, uint64_t silent_ns,
                                     Timestamp now, Output* out) {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  if (worker >= j->workers.size()) return false;
  const WorkerRegs& w = j->workers[worker];
  if (!w.live || !w.joined || j->finished || Elapsed(w.last_seen, now) < silent_ns) return false;
  RemoveFromBarrier(*j, worker, now, out);
  return true;
}

Status Pipeline::Finish(uint16_t job, Timestamp now, Output* out) {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  j->finished = true;
  ReleaseEligible(*j, now, out);
  return Status::Ok();
}

Result<JobConfig> Pipeline::Config(uint16_t job) const {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  return j->config;
}

Result<JobTelemetry> Pipeline::Telemetry(uint16_t job) const {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  // Shared: what the shared paths (INC, READ) change is atomic (Relaxed), the
  // rest changes only under the exclusive lock; a scrape or a controller's
  // poll must not stall the job's traffic (nor wait for its bursts to end).
  std::shared_lock lock(j->mu);
  JobTelemetry t;
  t.config = j->config;
  t.rows = j->rows;
  t.live_workers = j->live_count;
  t.low = j->low_all;
  t.high = j->high;
  t.active = j->banks[j->active].params;
  t.active_epoch = j->banks[j->active].epoch;
  t.swap_pending = j->swap_pending;
  t.next = j->banks[j->active ^ 1].params;
  t.next_epoch = j->banks[j->active ^ 1].epoch;
  t.swap_clock = j->swap_clock;
  t.max_released = j->max_released;
  t.saturated = j->saturated;
  t.finished = j->finished;
  t.counters = JobCounters(j->counters);
  t.workers.reserve(j->workers.size());
  for (uint32_t i = 0; i < j->workers.size(); ++i) {
    const WorkerRegs& w = j->workers[i];
    WorkerTelemetry& wt = t.workers.emplace_back();
    wt.rank = i;
    wt.done = w.done;
    wt.joined = w.joined;
    wt.live = w.live;
    wt.waiting = j->waiting.test(i);
    wt.rows_this_clock = w.rows_this_clock;
    wt.wait_since = w.wait_since;
    wt.last_seen = w.last_seen;
    wt.completed_at = w.completed_at;
    wt.iter_ns = w.iter_ns;
    wt.work_ns = w.work_ns;
    wt.last_work_ns = w.last_work_ns;
    wt.addr = w.addr;
    wt.local = w.local;
    wt.counters = WorkerCounters(w.counters);
  }
  return t;
}

std::vector<uint16_t> Pipeline::JobIds() const {
  std::shared_lock lock(table_mu_);
  std::vector<uint16_t> ids;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i] != nullptr) ids.push_back(static_cast<uint16_t>(i));
  }
  return ids;
}

GlobalCounters Pipeline::global_counters() const {
  GlobalCounters g;
  g.packets = globals_.packets.load(std::memory_order_relaxed);
  for (size_t i = 0; i < g.parse_errors.size(); ++i) {
    g.parse_errors[i] = globals_.parse_errors[i].load(std::memory_order_relaxed);
  }
  g.unknown_job = globals_.unknown_job.load(std::memory_order_relaxed);
  g.not_request = globals_.not_request.load(std::memory_order_relaxed);
  g.bad_key = globals_.bad_key.load(std::memory_order_relaxed);
  return g;
}

Result<std::vector<int32_t>> Pipeline::Model(uint16_t job) const {
  std::shared_ptr<JobState> j = Find(job);
  if (j == nullptr) return NoJob(job);
  std::lock_guard lock(j->mu);
  std::vector<int32_t> model(j->visible);
  for (uint32_t r = 0; r < j->rows; ++r) {
    if (j->pending_clock[r] == proto::kNoClock || j->pending_folded[r]) continue;
    const size_t base = size_t{r} * j->config.row_width;
    AddRowSaturating(model.data() + base, j->pending.data() + base, j->config.RowLength(r));
  }
  return model;
}

}  // namespace serene::dataplane
