// Pipeline: the Serene switch data plane, a pure function over switch state.
//
//   Process(datagram, source, local, now, out) -> ProcessResult
//
// parses and authenticates a packet, checks its source against the job's
// allow-list, runs it through the stages (membership,
// aggregation table, barrier) of its job and appends the packets to emit to
// `out`. It has no sockets, threads or clocks of its own: the same code runs
// under the UDP daemon, under unit tests with hand-made packets and under a
// virtual-time simulator. Per-packet work is bounded (one row, or one pass
// over the job's ranks for a barrier decision) and independent of the number
// of jobs; nothing is allocated on the packet path after job creation.
//
// Control operations (create/delete job, install a policy, evict a rank,
// telemetry) are the runtime API's back end. Those that can release waiting
// ranks take an Output too.
//
// Thread safety: every method is thread-safe. Jobs are independent: packets
// of different jobs proceed in parallel. Within a job, INCs and READs take the
// job's lock shared plus a lock on their row's stripe, so those of different
// rows proceed in parallel; JOIN, CLOCK, LEAVE and every control operation
// take the job's lock exclusive (job_state.h lists what each lock guards).
// A packet is authenticated (key, source allow-list) before it takes any
// lock of its job: one that fails takes none and changes nothing but a drop
// counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <vector>

#include "common/status.h"
#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "dataplane/counters.h"
#include "dataplane/job_config.h"
#include "dataplane/join_cookie.h"
#include "dataplane/memory_budget.h"
#include "dataplane/output.h"
#include "dataplane/shared_tally.h"
#include "dataplane/telemetry.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

struct JobState;

struct ProcessResult {
  Verdict verdict = Verdict::kDropped;
  // For kRefused / kDropped; for a served LEAVE whose FINISHED flag was
  // ignored (the rank was not live), kFinishNotLive.
  DropReason reason = DropReason::kNone;
  proto::ParseError parse_error = proto::ParseError::kOk;  // for DropReason::kParse
};

class Pipeline {
 public:
  // `incarnation_seed` makes each job's incarnation number (JOIN_ACK) differ
  // from the previous switch's: the daemon passes a random seed, tests a
  // fixed one.
  // `cookie_secret` keys the JOIN cookies (join_cookie.h): the daemon draws
  // it at start, so a restarted switch accepts none of its predecessor's.
  // `memory` (optional) bounds CreateJob by the memory the switch may still
  // allocate (memory_budget.h); REQUIRES: it outlives the pipeline.
  explicit Pipeline(uint64_t incarnation_seed = 0, const CookieSecret& cookie_secret = {},
                    const MemoryBudgetSource* memory = nullptr);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Processes one datagram from `src`, received at `now` on the switch
  // address `local` (the datagram's destination: with a wildcard bind, what
  // IP_PKTINFO reported). Replies are emitted from `local`; a JOIN stores it
  // per rank so that RELEASEs triggered by other ranks or by control
  // operations leave from the address the rank talks to. An invalid `local`
  // (the overload without it) means unknown: the daemon's socket decides.
  // REQUIRES: out->HasRoomForProcess().
  ProcessResult Process(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                        const proto::Endpoint& local, Timestamp now, Output* out);
  ProcessResult Process(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                        Timestamp now, Output* out) {
    return Process(datagram, src, proto::Endpoint{}, now, out);
  }

  // Several datagrams processed in a row by one thread (the daemon's receive
  // batch): Burst::Process has Pipeline::Process's effect on each, in order,
  // but consecutive INCs and READs of one job share one job lookup and one
  // hold of the job's shared lock, and the packet counter and the counts
  // they add to the job (shared_tally.h) are added once per hold — the
  // per-packet atomics that cost as much as a row of 362 values. The hold
  // ends at End() (and the destructor), at a packet of another kind or job,
  // and as soon as a writer (a CLOCK, a control operation) waits for the
  // job, so writers are not held back by more than one packet. A job deleted
  // during a burst still takes the burst's remaining INCs and READs, as
  // packets in flight at the deletion would. Call End() before anything that
  // may block (sending, waiting for datagrams). Not thread-safe: one per
  // thread.
  class Burst {
   public:
    explicit Burst(Pipeline& pipeline) : p_(pipeline) {}
    ~Burst() { End(); }
    Burst(const Burst&) = delete;
    Burst& operator=(const Burst&) = delete;
    // REQUIRES: out->HasRoomForProcess().
    ProcessResult Process(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                          const proto::Endpoint& local, Timestamp now, Output* out);
    // Releases the held job and adds the burst's packets to the counter.
    void End();

   private:
    void Release();  // adds tally_ to the held job, then unlocks it
    Pipeline& p_;
    std::shared_ptr<JobState> held_;  // its lock held shared while set
    SharedTally tally_;               // counts for held_, added at Release
    uint64_t packets_ = 0;
  };

  // --- Control operations (the runtime API's back end) ---

  // Creates a job. Admission is atomic and comes before any allocation:
  // under one lock it refuses an invalid config (InvalidArgument), an id
  // that exists or that another CreateJob is creating (AlreadyExists),
  // kMaxJobs jobs created or being created (FailedPrecondition), and
  // registers (JobStateBytes) larger than the memory budget less what the
  // jobs being created have reserved (ResourceExhausted, with the numbers);
  // then it records the reservation. Only then are the registers allocated
  // and zeroed, outside every lock; the job is installed and its reservation
  // dropped (the memory is now the process's own, which the budget sees).
  // A failed allocation releases the reservation (ResourceExhausted).
  Status CreateJob(const JobConfig& config);
  // Deletes a job and its state; packets for it are then dropped as unknown.
  // Its id and its slot among kMaxJobs are free at once; its memory once the
  // packets in flight let go of it.
  Status DeleteJob(uint16_t job);

  // Installs `params` in the idle policy bank, effective for CLOCK(c) with
  // c >= effective_clock (nullopt: as soon as possible, the clock after the
  // highest already released). Fails if a previous change has not retired yet,
  // effective_clock <= a clock already released, or it is beyond the horizon
  // (policy_banks.h, kSwapHorizon). Waiting ranks that the
  // change makes eligible are released into `out`.
  Result<PolicyChange> SetPolicy(uint16_t job, const BarrierParams& params,
                                 std::optional<uint32_t> effective_clock, Timestamp now,
                                 Output* out);

  // Withdraws the pending policy change (policy_banks.h, CancelPolicy): only
  // while no rank has completed its effective clock. `epoch`, if given, must
  // be the pending change's. Returns the withdrawn change; the rule in force
  // keeps judging every clock. Releases nobody (every waiting rank was judged
  // by the rule in force), but `out` gets whatever becomes eligible.
  Result<PolicyChange> CancelPolicyChange(uint16_t job, std::optional<uint32_t> epoch,
                                          Timestamp now, Output* out);

  // Removes a rank from the barrier (it stopped sending). It may JOIN again and
  // resumes from the switch's model. Ranks the eviction unblocks are released.
  // *was_live (optional) tells whether the rank was in the barrier.
  Status Evict(uint16_t job, uint16_t worker, Timestamp now, Output* out,
               bool* was_live = nullptr);

  // Evicts `worker` only if it is live and its last packet is older than
  // `silent_ns` at `now` (checked and done under the job's lock, so a rank
  // that just spoke is never evicted). Returns whether it was evicted.
  Result<bool> EvictIfSilent(uint16_t job, uint16_t worker, uint64_t silent_ns, Timestamp now,
                             Output* out);

  // Ends the job: every waiting rank is released with the FINISHED flag and
  // every later CLOCK is released at once.
  Status Finish(uint16_t job, Timestamp now, Output* out);

  // A copy of the job's registers and counters, read under its shared lock:
  // INC and READ go on meanwhile (their counters are read as they stand).
  Result<JobTelemetry> Telemetry(uint16_t job) const;
  // The job's config as created (immutable for its life); no lock on its state.
  Result<JobConfig> Config(uint16_t job) const;
  std::vector<uint16_t> JobIds() const;
  GlobalCounters global_counters() const;

  // The job's model as the live table holds it (visible + pending), for tests
  // and checkpoints. Takes the job's lock; O(elements).
  Result<std::vector<int32_t>> Model(uint16_t job) const;

 private:
  std::shared_ptr<JobState> Find(uint16_t job) const;
  // Checks the packet's key and source against the job's configuration
  // (fixed at creation): no lock, no register but the drop counters
  // (atomic), so a stranger's packets never wait for the job nor hold it.
  // Returns kNone, or the reason it was dropped (counted).
  DropReason Authenticate(JobState& job, const proto::Header& h, const proto::Endpoint& src);
  // Process() after the job lookup and authentication, with the job's lock held as its op needs:
  // shared for INC and READ, which count into `*shared` (the burst adds it to
  // the job before it unlocks), exclusive for the others (`shared` null).
  ProcessResult ProcessLocked(JobState& job, SharedTally* shared, const proto::PacketView& pkt,
                              const proto::Endpoint& src, const proto::Endpoint& local,
                              Timestamp now, Output* out);
  // CreateJob's admission: checks and records a reservation of `bytes` for
  // the job (see CreateJob), or releases it after a failed allocation.
  Status Reserve(const JobConfig& config, uint64_t bytes);
  void Unreserve(uint16_t job, uint64_t bytes);

  // Job id -> state: an exact-match table (65536 entries, like a P4 table
  // keyed on the 16-bit job id). Guarded by table_mu_ for writers; readers on
  // the packet path take it shared.
  mutable std::shared_mutex table_mu_;
  std::vector<std::shared_ptr<JobState>> jobs_;
  size_t job_count_ = 0;

  // Admission (CreateJob): jobs reserved but not yet installed. Lock order:
  // admit_mu_, then table_mu_. DeleteJob takes table_mu_ only.
  const MemoryBudgetSource* const memory_;
  std::mutex admit_mu_;
  std::vector<bool> creating_;   // by job id; guarded by admit_mu_
  size_t creating_count_ = 0;    // guarded by admit_mu_
  uint64_t reserved_bytes_ = 0;  // registers reserved, not yet allocated; guarded by admit_mu_
  const uint64_t incarnation_seed_;
  const CookieSecret cookie_secret_;
  std::atomic<uint64_t> creations_{0};

  struct AtomicGlobals {
    std::atomic<uint64_t> packets{0};
    std::array<std::atomic<uint64_t>, proto::kNumParseErrors> parse_errors{};
    std::atomic<uint64_t> unknown_job{0};
    std::atomic<uint64_t> not_request{0};
    std::atomic<uint64_t> bad_key{0};
  };
  AtomicGlobals globals_;
};

}  // namespace serene::dataplane
