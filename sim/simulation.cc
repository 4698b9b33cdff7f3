#include "sim/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "dataplane/barrier_params.h"
#include "dataplane/job_config.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"
#include "sim/barrier_hold.h"
#include "sim/packet_pool.h"
#include "sim/sim_controller.h"

namespace serene::sim {
namespace {

constexpr uint16_t kJob = 1;
constexpr uint32_t kKey = 0x5e7e5111;
constexpr uint16_t kRankPort = 5000;
constexpr uint16_t kSwitchPort = 7000;

// Rank r lives at 10.(r / 256).(r % 256).1:5000, the switch at 10.255.255.254.
proto::Endpoint RankEndpoint(int rank) {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.port = kRankPort;
  e.addr[0] = 10;
  e.addr[1] = static_cast<uint8_t>(rank >> 8);
  e.addr[2] = static_cast<uint8_t>(rank & 0xFF);
  e.addr[3] = 1;
  return e;
}

proto::Endpoint SwitchEndpoint() {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.port = kSwitchPort;
  e.addr = {10, 255, 255, 254};
  return e;
}

int RankOf(const proto::Endpoint& e) {
  if (e.family != proto::Endpoint::Family::kIPv4 || e.addr[0] != 10 || e.port != kRankPort) {
    return -1;
  }
  return e.addr[1] * 256 + e.addr[2];
}

uint32_t ClockOf(std::span<const uint8_t> datagram) {
  proto::PacketView p;
  if (proto::Decode(datagram.data(), datagram.size(), &p) != proto::ParseError::kOk) return 0;
  return p.header.clock;
}

bool IsRelease(std::span<const uint8_t> datagram) {
  proto::PacketView p;
  return proto::Decode(datagram.data(), datagram.size(), &p) == proto::ParseError::kOk &&
         p.header.op == proto::Op::kRelease;
}

std::string PhaseText(const SimRank& r) {
  const train::RunMetrics& m = r.metrics();
  return fmt::format("rank {}: {} iterations{}", m.rank, m.iterations,
                     r.done() ? ", done" : ", still running");
}

// The world: links, ranks, the pipeline and the event loop that ties them.
class World {
 public:
  World(const SimulationOptions& o, RankWork& work) : o_(o), work_(work) {}

  Status Init() {
    dataplane::JobConfig job;
    job.id = kJob;
    job.workers = static_cast<uint32_t>(o_.workers);
    job.elements = work_.elements();
    job.row_width = o_.row_width;
    job.scale_log2 = o_.scale_log2;
    job.key = kKey;
    job.evict_after_ms = static_cast<uint32_t>(o_.evict_after_s * 1e3 + 0.5);
    const bool script = o_.policy.ends_with(".lua");
    if (!script) {
      auto p = dataplane::BarrierParams::Parse(o_.policy);
      if (!p.ok()) return p.status();
      job.policy = *p;
    }
    if (Status s = pipeline_.CreateJob(job); !s.ok()) return s;
    if (script) {
      auto c = SimController::Create(o_.policy, o_.params, &pipeline_, kJob, job.workers,
                                     [this](const dataplane::Output& out) { Route(out); });
      if (!c.ok()) return c.status();
      controller_ = std::move(*c);
    }
    for (int r = 0; r < o_.workers; ++r) {
      up_.emplace_back(o_.link, train::DeriveSeed(o_.seed, 2 * r, 0x5117));
      down_.emplace_back(o_.link, train::DeriveSeed(o_.seed, 2 * r + 1, 0x5117));
    }
    for (int r = 0; r < o_.workers; ++r) {
      RankOptions ro;
      ro.rank = r;
      ro.world_size = o_.workers;
      ro.job = kJob;
      ro.key = kKey;
      ro.row_width = o_.row_width;
      ro.max_steps = o_.max_steps;
      ro.target_accuracy = o_.target_accuracy;
      ro.eval_every = o_.eval_every;
      ro.evaluates = r == 0;
      ro.compute = o_.compute;
      if (o_.straggler && std::find(o_.straggler_ranks.begin(), o_.straggler_ranks.end(), r) !=
                              o_.straggler_ranks.end()) {
        ro.straggler = o_.straggler;
      }
      ro.straggler_base = o_.straggler_base;
      ro.seed = o_.seed;
      ro.rto = RetransmissionTimeout();
      SimRank::ReportPause report;
      if (controller_) {
        report = [this, r](SimTime pause) { controller_->ReportPause(r, pause); };
      }
      ranks_.push_back(std::make_unique<SimRank>(
          ro, work_, events_, [this, r](std::span<const uint8_t> d) { ToSwitch(r, d); },
          std::move(report)));
    }
    return Status::Ok();
  }

  Result<SimulationResult> Run() {
    if (controller_) controller_->Start(0);
    for (auto& r : ranks_) r->Start();
    if (controller_ && controller_->adaptive()) ScheduleTick();
    if (o_.evict_after_s > 0) ScheduleEvictionSweep();
    const SimTime limit = FromSeconds(o_.max_virtual_s);
    while (!AllDone()) {
      if (!events_.RunNext()) return Stalled("no event is pending");
      for (auto& r : ranks_) {
        if (!r->status().ok()) return r->status();
      }
      if (events_.now() > limit)
        return Stalled(fmt::format("{} s of virtual time passed", o_.max_virtual_s));
    }
    return Collect();
  }

 private:
  // Covers a pull of the whole model over one link, every rank's rows
  // through a switch that takes time per packet (pushes and READs), plus a
  // generous margin, so that without loss nothing is re-sent (docs/simulator.md).
  SimTime RetransmissionTimeout() const {
    const double bytes = static_cast<double>(work_.elements()) * 4 * o_.workers;
    const double rows = std::ceil(static_cast<double>(work_.elements()) / o_.row_width);
    const double switch_s = 2 * (rows + 1) * o_.workers * o_.switch_service_s;
    return FromSeconds(
        std::max(0.01, 4 * (2 * o_.link.latency_s + bytes * 8 / (o_.link.gbps * 1e9) + switch_s)));
  }

  bool AllDone() const {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& r) { return r->done(); });
  }

  Status Stalled(const std::string& why) {
    std::string text = "the simulation did not end (" + why + "):";
    for (const auto& r : ranks_) text += " " + PhaseText(*r) + ";";
    text.pop_back();
    return Status::DeadlineExceeded(text);
  }

  void ScheduleTick() {
    events_.After(FromSeconds(o_.control_period_s), [this] {
      if (AllDone()) return;
      controller_->Tick(events_.now());
      ScheduleTick();
    });
  }

  // The daemon's silence evictor, in virtual time: every live rank silent for
  // evict_after_s is evicted through the pipeline, and the RELEASEs that
  // unblocks are delivered.
  void ScheduleEvictionSweep() {
    events_.After(FromSeconds(o_.evict_check_s), [this] {
      if (AllDone()) return;
      const auto limit = static_cast<uint64_t>(FromSeconds(o_.evict_after_s));
      for (int r = 0; r < o_.workers; ++r) {
        evict_out_.Clear();
        auto evicted =
            pipeline_.EvictIfSilent(kJob, static_cast<uint16_t>(r), limit,
                                    static_cast<dataplane::Timestamp>(events_.now()), &evict_out_);
        if (evicted.ok() && *evicted) {
          ++evictions_;
          Route(evict_out_);
        }
      }
      ScheduleEvictionSweep();
    });
  }

  void ToSwitch(int rank, std::span<const uint8_t> datagram) {
    ++packets_;
    auto at = up_[rank].Send(events_.now(), datagram.size());
    if (!at) return;
    const uint32_t slot = packets_in_flight_.Put(datagram);
    events_.At(*at, [this, rank, slot] {
      if (switch_service_ == 0) return Process(rank, slot);
      // Queued behind the packets that arrived before it.
      switch_busy_until_ = std::max(switch_busy_until_, events_.now()) + switch_service_;
      events_.At(switch_busy_until_, [this, rank, slot] { Process(rank, slot); });
    });
  }

  // The switch processes the datagram in `slot` from `rank` now.
  void Process(int rank, uint32_t slot) {
    const std::span<const uint8_t> bytes = packets_in_flight_.Get(slot);
    out_.Clear();
    const dataplane::ProcessResult res =
        pipeline_.Process(bytes, RankEndpoint(rank), SwitchEndpoint(),
                          static_cast<dataplane::Timestamp>(events_.now()), &out_);
    // Held at the barrier; not at clock 0, the setup before the run
    // clocks start (every rank waits there for rank 0's initial model).
    if ((res.verdict == dataplane::Verdict::kWaiting ||
         (res.verdict == dataplane::Verdict::kDropped &&
          res.reason == dataplane::DropReason::kClockWaiting)) &&
        ClockOf(bytes) != 0) {
      hold_.Held(rank, events_.now());
    }
    packets_in_flight_.Free(slot);
    Route(out_);
  }

  void Route(const dataplane::Output& out) {
    for (size_t i = 0; i < out.size(); ++i) {
      const int rank = RankOf(out.packet(i).dst);
      if (rank < 0 || rank >= o_.workers) continue;
      if (hold_.held(rank) && IsRelease(out.bytes(i))) hold_.Released(rank, events_.now());
      ++packets_;
      auto at = down_[rank].Send(events_.now(), out.packet(i).size);
      if (!at) continue;
      const uint32_t slot = packets_in_flight_.Put(out.bytes(i));
      events_.At(*at, [this, rank, slot] {
        ranks_[rank]->OnPacket(packets_in_flight_.Get(slot));
        packets_in_flight_.Free(slot);
      });
    }
  }

  Result<SimulationResult> Collect() {
    SimulationResult res;
    SimTime last = 0;
    for (const auto& r : ranks_) {
      res.ranks.push_back(r->metrics());
      // Waiting for others is what the switch held the rank (barrier_hold.h).
      res.ranks.back().barrier_wait_s = hold_.seconds(r->metrics().rank);
      res.counters.push_back(r->counters());
      last = std::max(last, r->origin() + FromSeconds(r->metrics().job_completion_s));
    }
    const SimTime origin = ranks_.empty() ? 0 : ranks_[0]->origin();
    if (controller_) {
      for (const auto& a : controller_->applied()) {
        res.changes.push_back(
            {ToSeconds(a.at - origin), a.high, a.effective_clock, a.rule, a.epoch});
      }
      res.controller_log = controller_->log();
    }
    if (auto t = pipeline_.Telemetry(kJob); t.ok()) res.switch_counters = t->counters;
    res.virtual_s = ToSeconds(last);
    res.events = events_.executed();
    res.packets = packets_;
    res.evictions = evictions_;
    for (const Link& l : up_) res.lost += l.lost();
    for (const Link& l : down_) res.lost += l.lost();
    return res;
  }

  const SimulationOptions& o_;
  RankWork& work_;
  EventQueue events_;
  dataplane::Pipeline pipeline_{/*incarnation_seed=*/0};
  dataplane::Output out_ = dataplane::Output::ForBatch(1);
  dataplane::Output evict_out_ = dataplane::Output::ForBatch(1);
  uint64_t evictions_ = 0;
  std::unique_ptr<SimController> controller_;
  std::vector<Link> up_, down_;
  const SimTime switch_service_ = FromSeconds(o_.switch_service_s);
  SimTime switch_busy_until_ = 0;  // when the switch is done with the packets that arrived
  std::vector<std::unique_ptr<SimRank>> ranks_;
  uint64_t packets_ = 0;
  BarrierHold hold_{o_.workers};
  PacketPool packets_in_flight_;
};

}  // namespace

Result<SimulationResult> RunSimulation(const SimulationOptions& options, RankWork& work) {
  if (options.workers < 1) return Status::InvalidArgument("workers must be >= 1");
  if (options.eval_every < 1) return Status::InvalidArgument("eval_every must be >= 1");
  if (options.evict_after_s < 0 || options.evict_after_s > 3600 || options.evict_check_s <= 0) {
    return Status::InvalidArgument("evict_after_s must be 0..3600 and evict_check_s > 0");
  }
  if (!(options.switch_service_s >= 0 && options.switch_service_s <= 1)) {
    return Status::InvalidArgument("switch_service_s must be 0..1 s per packet, got " +
                                   std::to_string(options.switch_service_s));
  }
  if (options.max_steps < 1 && options.target_accuracy <= 0) {
    return Status::InvalidArgument("set max_steps or a target accuracy: the job would never end");
  }
  World world(options, work);
  if (Status s = world.Init(); !s.ok()) return s;
  return world.Run();
}

}  // namespace serene::sim
