// SimRank: one simulated training rank — a worker's side of the Serene
// protocol (docs/protocol.md "A worker's loop") as an event-driven state
// machine in virtual time, with the training loop of train/trainer.h around
// it (docs/simulator.md).
//
//   JOIN -> [rank 0: INC(0, every row, initial model)] -> CLOCK(0) -> RELEASE(0)
//   loop: READ(t, every row) -> [evaluate every eval_every steps; stop at the
//         target or the step limit] -> compute (virtual time from the compute
//         model, + the straggler pattern's sleep) -> INC(t, every row) ->
//         CLOCK(t) -> RELEASE(t) | NACK -> re-send the rows it lists, CLOCK
//   stop: LEAVE (FINISHED if this rank reached the target) until its reply.
//
// A rank the switch evicted (silent too long) JOINs again on the ERROR and
// resumes where the JOIN_ACK says, its step in flight lost.
//
// READs, CLOCKs, JOINs and LEAVEs are re-sent after a retransmission timeout
// (CLOCKs with exponential back-off while the barrier holds the rank); INCs
// only when a NACK lists them. Packets are real wire-format datagrams handed
// to `send`; replies come back through OnPacket. What the rank measured is a
// train::RunMetrics on the rank's run clock (virtual seconds since its
// RELEASE(0)), so the experiment report reads it like a real rank's.
//
// Not thread-safe: driven by the simulation's single event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"
#include "proto/codec.h"
#include "sim/event_queue.h"
#include "sim/rank_work.h"
#include "train/metrics.h"
#include "train/rng.h"
#include "train/straggler.h"

namespace serene::sim {

// How long a step's computation takes in virtual time: max(floor_s, compute_s)
// × (1 + u), u uniform in [−jitter, jitter] (drawn per rank and step from the seed);
// and one evaluation of the test set on an evaluating rank: eval_s (its
// math is real and instant; this is the time a real rank spends in it,
// which under SYNC every rank waits for).
struct ComputeModel {
  double compute_s = 0.006;
  double jitter = 0.05;
  double eval_s = 0;
  // A step's computation lasts at least this long (the scenario's
  // compute_floor_ms, as serene-train --compute-floor-ms sleeps the rest).
  double floor_s = 0;
};

// What the straggler pattern's sleep is relative to (train/straggler.h hands
// its injector a time per iteration and keeps the running mean of it).
enum class StragglerBase {
  kCompute,        // the step's compute time (what serene-train does)
  kIteration,      // the iteration without waiting for others: pull + compute +
                   // the last push's time outside the barrier (the paper's choice)
  kWallIteration,  // the whole iteration as a wall clock sees it, waiting for
                   // others included: pull + compute + the last push
};

struct RankOptions {
  int rank = 0;
  int world_size = 1;
  uint16_t job = 1;
  uint32_t key = 0;
  uint32_t row_width = 256;
  int64_t max_steps = 0;       // 0 = no limit
  double target_accuracy = 0;  // 0 = never
  int64_t eval_every = 25;
  bool evaluates = false;
  ComputeModel compute;
  std::optional<train::StragglerSpec> straggler;  // this rank's pattern, if any
  StragglerBase straggler_base = StragglerBase::kCompute;
  uint64_t seed = 1;
  SimTime rto = FromSeconds(0.01);       // first retransmission timeout
  SimTime max_backoff = FromSeconds(1);  // CLOCK re-sends while waiting
};

// Counters of the protocol, beyond RunMetrics.
struct RankCounters {
  uint64_t packets_sent = 0;
  uint64_t read_retransmits = 0;
  uint64_t clock_retransmits = 0;
  uint64_t nacks = 0;
  uint64_t incs_resent = 0;
  uint64_t rejoins = 0;  // JOINs after the switch evicted the rank
};

class SimRank {
 public:
  using Send = std::function<void(std::span<const uint8_t> datagram)>;
  // Told at the end of each evaluation how long it took, as serene-train
  // reports it through the runtime API (ReportPause); may be empty.
  using ReportPause = std::function<void(SimTime pause)>;

  SimRank(const RankOptions& options, RankWork& work, EventQueue& events, Send send,
          ReportPause report_pause = nullptr);

  // Sends the first JOIN.
  void Start();
  // A datagram from the switch.
  void OnPacket(std::span<const uint8_t> datagram);

  bool done() const { return phase_ == Phase::kDone; }
  // Not ok when the rank hit something the protocol does not allow (an
  // ERROR reply, a failed computation): the simulation stops.
  const Status& status() const { return status_; }
  const train::RunMetrics& metrics() const { return m_; }
  const RankCounters& counters() const { return counters_; }
  // Virtual time of the rank's RELEASE(0): where its run clock starts.
  SimTime origin() const { return origin_; }

 private:
  enum class Phase { kJoin, kRejoin, kClockWait, kPull, kCompute, kLeaving, kDone };

  void SendRequest(proto::Op op, uint32_t clock, uint32_t row, uint16_t flags,
                   std::span<const int32_t> values = {});
  void SendInc(uint32_t clock, uint32_t row, bool resend);
  void SendClock(bool retransmit);
  // After the rows of a clock are out: CLOCK, and wait for its RELEASE.
  void EnterClockWait(bool retransmit);
  void ArmTimer(SimTime delay);
  void OnTimer(uint64_t generation);

  void Rejoin();
  void OnJoinAck(const proto::PacketView& p);
  void OnRelease(const proto::PacketView& p);
  void OnNack(const proto::PacketView& p);
  void OnReadReply(const proto::PacketView& p);

  void BeginIteration();
  void AfterPull();
  void Push();
  void Evaluate(train::TimelinePoint* point);
  void Stop(train::StopReason reason, bool finish_job);
  void Fail(Status s);
  double RunClock() const;

  const RankOptions o_;
  RankWork& work_;
  EventQueue& events_;
  Send send_;
  ReportPause report_pause_;
  uint32_t rows_ = 0;
  uint64_t elements_ = 0;

  Phase phase_ = Phase::kJoin;
  Status status_;
  uint32_t clock_ = 0;  // the clock being worked on (READ/INC/CLOCK)
  uint32_t rows_sent_ = 0;
  uint64_t timer_generation_ = 0;
  SimTime backoff_ = 0;
  uint64_t cookie_ = 0;  // the last COOKIE's, echoed by every JOIN

  std::vector<int32_t> pulled_;  // empty for timing-only work
  std::vector<int32_t> update_;
  std::vector<uint8_t> have_row_;
  uint32_t missing_rows_ = 0;
  std::vector<uint8_t> packet_;

  std::unique_ptr<train::StragglerInjector> straggler_;
  train::Rng jitter_rng_;

  // Measurements.
  train::RunMetrics m_;
  RankCounters counters_;
  SimTime origin_ = 0;
  SimTime pull_start_ = 0;
  SimTime push_start_ = 0;
  SimTime clock_sent_ = 0;
  double last_pull_s_ = 0;
  double last_push_outside_barrier_s_ = 0;
  double last_push_s_ = 0;
  double step_loss_ = 0;  // the step in flight's, counted when its push completes
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  int64_t last_eval_step_ = -1;
  bool finished_seen_ = false;
  uint16_t leave_flags_ = 0;
};

}  // namespace serene::sim
