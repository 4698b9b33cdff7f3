#include "train/trainer.h"

#include "train/momentum.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <utility>

namespace serene::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Longest single sleep while injecting a straggler delay, so a long failure
// still notices a job that another rank ended.
constexpr double kSleepSliceS = 0.1;

}  // namespace

Result<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options,
                                                 const Dataset& train, const Dataset* test,
                                                 Backend& backend) {
  const int rank = backend.rank();
  const int world = backend.world_size();
  if (options.learning_rate <= 0 || !std::isfinite(options.learning_rate)) {
    return Status::InvalidArgument("learning rate must be positive, got " +
                                   std::to_string(options.learning_rate));
  }
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    return Status::InvalidArgument("momentum must be in [0, 1), got " +
                                   std::to_string(options.momentum));
  }
  if (!(options.compute_floor_s >= 0 && options.compute_floor_s <= 60)) {
    return Status::InvalidArgument("compute floor must be in [0, 60] s, got " +
                                   std::to_string(options.compute_floor_s));
  }
  if (options.max_steps < 0) return Status::InvalidArgument("step limit must be >= 0");
  if (options.time_limit_s < 0) return Status::InvalidArgument("time limit must be >= 0");
  if (options.max_steps == 0 && options.time_limit_s == 0) {
    return Status::InvalidArgument(
        "set a step limit or a time limit (a target accuracy alone "
        "might never be reached)");
  }
  if (options.target_accuracy < 0 || options.target_accuracy > 1) {
    return Status::InvalidArgument("target accuracy must be in [0, 1], got " +
                                   std::to_string(options.target_accuracy));
  }
  if (options.eval_every < 1) return Status::InvalidArgument("eval interval must be >= 1 step");
  const bool evaluates = Contains(options.eval_ranks, rank);
  if (evaluates && test == nullptr) {
    return Status::InvalidArgument("rank " + std::to_string(rank) +
                                   " evaluates but has no test set");
  }
  if (options.target_accuracy > 0 && options.eval_ranks.empty()) {
    return Status::InvalidArgument("a target accuracy needs at least one evaluating rank");
  }
  Result<std::unique_ptr<Network>> network = Network::Create(options.model);
  if (!network.ok()) return network.status();
  BatcherOptions batcher_options;
  batcher_options.rank = rank;
  batcher_options.world_size = world;
  batcher_options.batch_size = options.batch_size;
  batcher_options.seed = options.seed;
  Result<std::unique_ptr<ShardedBatcher>> batcher = ShardedBatcher::Create(train, batcher_options);
  if (!batcher.ok()) return batcher.status();
  auto trainer = std::unique_ptr<Trainer>(
      new Trainer(options, test, backend, std::move(*network), std::move(*batcher)));
  trainer->evaluates_ = evaluates;
  return trainer;
}

Trainer::Trainer(const TrainerOptions& options, const Dataset* test, Backend& backend,
                 std::unique_ptr<Network> network, std::unique_ptr<ShardedBatcher> batcher)
    : options_(options),
      test_(test),
      backend_(backend),
      network_(std::move(network)),
      batcher_(std::move(batcher)),
      model_(InitialParameters(options.model, options.seed)),
      grad_(model_.size()),
      update_(model_.size()),
      velocity_(options.momentum > 0 ? model_.size() : 0) {
  if (Contains(options.straggler_ranks, backend.rank()) &&
      options.straggler.kind != StragglerKind::kNone) {
    straggler_ = std::make_unique<StragglerInjector>(options.straggler,
                                                     StragglerSeed(options.seed, backend.rank()));
  }
}

Trainer::~Trainer() = default;

Status Trainer::Evaluate(RunMetrics* m, TimelinePoint* point) {
  const Clock::time_point t = Clock::now();
  Result<EvalResult> r = network_->Evaluate(model_, *test_, options_.eval_samples);
  m->eval_s += Seconds(Clock::now() - t);
  if (!r.ok()) return r.status();
  point->accuracy = r->accuracy;
  point->test_loss = r->loss;
  m->final_accuracy = r->accuracy;
  m->final_test_loss = r->loss;
  return Status::Ok();
}

void Trainer::SleepFor(double seconds) {
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(seconds));
  while (true) {
    const Clock::time_point now = Clock::now();
    if (now >= end || backend_.Finished()) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(
        end - now,
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kSleepSliceS))));
  }
}

void Trainer::LogProgress(const RunMetrics& m, double now_s, double train_loss) const {
  const TimelinePoint* last = m.timeline.empty() ? nullptr : &m.timeline.back();
  const bool has_acc =
      last != nullptr && last->step == m.iterations && std::isfinite(last->accuracy);
  spdlog::info("[{} rank {}/{}] step {} t={:.1f}s{}{} compute={:.1f}s wait={:.1f}s sleep={:.1f}s",
               m.backend, m.rank, m.world_size, m.iterations, now_s,
               std::isfinite(train_loss) ? fmt::format(" loss={:.4f}", train_loss) : std::string(),
               has_acc ? fmt::format(" acc={:.4f}", last->accuracy) : std::string(), m.compute_s,
               m.pull_s + m.push_s, m.straggler_sleep_s);
}

Result<RunMetrics> Trainer::Run() {
  if (ran_) return Status::FailedPrecondition("Trainer::Run called twice");
  ran_ = true;
  RunMetrics m;
  m.backend = std::string(backend_.name());
  m.rank = backend_.rank();
  m.world_size = backend_.world_size();
  m.model = std::string(ModelKindName(options_.model));
  m.parameters = model_.size();
  m.seed = options_.seed;
  m.learning_rate = options_.learning_rate;
  m.batch_size = options_.batch_size;
  m.straggler = straggler_ ? straggler_->spec().ToString() : "none";
  m.target_accuracy = options_.target_accuracy > 0 ? options_.target_accuracy : kNaN;
  m.max_steps = options_.max_steps;
  m.time_limit_s = options_.time_limit_s;
  m.eval_every = options_.eval_every;
  m.evaluates = evaluates_;
  m.eval_samples =
      evaluates_
          ? std::min(options_.eval_samples == 0 ? test_->size : options_.eval_samples, test_->size)
          : 0;
  const int64_t log_every = options_.log_every == 0 ? options_.eval_every : options_.log_every;
  const float scale = static_cast<float>(-options_.learning_rate / m.world_size);

  Clock::time_point t = Clock::now();
  Status s = backend_.Initialize(model_);
  if (!s.ok()) return s;
  const Clock::time_point start = Clock::now();
  m.init_s = Seconds(start - t);
  auto now_s = [&] { return Seconds(Clock::now() - start); };

  double loss_sum = 0;  // training loss since the last timeline point
  int64_t loss_count = 0;
  int64_t last_eval_step = -1;
  SyncTiming timing;
  while (true) {
    if (backend_.Finished()) {
      m.stop_reason = StopReason::kFinishedByPeer;
      break;
    }
    const double iteration_start = now_s();
    t = Clock::now();
    timing = SyncTiming();
    s = backend_.Pull(model_, &timing);
    // The compute floor counts from when the pulled data reached the host.
    Clock::time_point floor_from = Clock::now();
    const double pull_s = Seconds(floor_from - t);
    if (timing.data_arrival != Clock::time_point::min()) {
      floor_from = std::min(floor_from, timing.data_arrival);
    }
    m.pull_s += pull_s;
    m.barrier_wait_s += timing.barrier_wait_s;
    if (!s.ok()) return s;
    if (backend_.Finished()) {
      m.stop_reason = StopReason::kFinishedByPeer;
      break;
    }

    const int64_t step = m.iterations;
    const bool at_limit = options_.max_steps > 0 && step >= options_.max_steps;
    if (step % options_.eval_every == 0 || at_limit) {
      TimelinePoint point;
      point.step = step;
      point.time_s = now_s();
      point.train_loss = loss_count > 0 ? loss_sum / static_cast<double>(loss_count) : kNaN;
      loss_sum = 0;
      loss_count = 0;
      if (evaluates_) {
        const double eval_before = m.eval_s;
        s = Evaluate(&m, &point);
        if (!s.ok()) return s;
        last_eval_step = step;
        floor_from = Clock::now();  // the step computes after the evaluation
        // A step follows (unless the target is reached): the others wait for it.
        if (options_.report_pause && !at_limit) options_.report_pause(m.eval_s - eval_before);
      }
      m.timeline.push_back(point);
      if (log_every > 0 && step % log_every == 0) LogProgress(m, point.time_s, point.train_loss);
      if (evaluates_ && options_.target_accuracy > 0 &&
          point.accuracy >= options_.target_accuracy) {
        m.stop_reason = StopReason::kTargetReached;
        m.target_reached_s = now_s();
        // At the step limit every rank stops by itself; Finish would wait for
        // ranks that are gone.
        if (!at_limit) {
          s = backend_.Finish();
          if (!s.ok()) return s;
        }
        break;
      }
    }
    if (at_limit) {
      m.stop_reason = StopReason::kStepLimit;
      break;
    }
    if (options_.time_limit_s > 0 && now_s() >= options_.time_limit_s) {
      m.stop_reason = StopReason::kTimeLimit;
      s = backend_.Finish();
      if (!s.ok()) return s;
      break;
    }

    // One SGD step on a local batch.
    t = Clock::now();
    batcher_->Next(&batch_);
    Result<float> loss = network_->Gradient(model_, batch_, grad_);
    if (!loss.ok()) return loss.status();
    if (velocity_.empty()) {
      for (size_t i = 0; i < grad_.size(); ++i) update_[i] = scale * grad_[i];
    } else {
      ApplyMomentum(static_cast<float>(options_.momentum), grad_, velocity_, scale, update_);
    }
    double compute_s = Seconds(Clock::now() - t);
    if (options_.compute_floor_s > 0) {
      // A rank with a core of its own would have started when the data came
      // (floor_from); one that shares cores got to run later and sleeps less.
      const double left = options_.compute_floor_s - Seconds(Clock::now() - floor_from);
      if (left > 0) SleepFor(left);
      compute_s = Seconds(Clock::now() - t);
    }
    m.compute_s += compute_s;

    double sleep_s = 0;
    if (straggler_) {
      // Relative to the step as a rank with its own core computes it.
      const double delay = straggler_->NextDelay(std::max(compute_s, options_.compute_floor_s));
      if (delay > 0) {
        t = Clock::now();
        SleepFor(delay);
        sleep_s = Seconds(Clock::now() - t);
        m.straggler_sleep_s += sleep_s;
      }
      m.slowed_iterations = straggler_->delayed_iterations();
    }

    t = Clock::now();
    timing = SyncTiming();
    s = backend_.Push(update_, model_, &timing);
    const double push_s = Seconds(Clock::now() - t);
    m.push_s += push_s;
    m.barrier_wait_s += timing.barrier_wait_s;
    if (!s.ok()) return s;
    if (backend_.Finished()) {
      m.stop_reason = StopReason::kFinishedByPeer;
      break;
    }
    ++m.iterations;
    loss_sum += *loss;
    ++loss_count;
    if (options_.log_iterations) {
      m.iteration_log.push_back(
          {m.iterations, iteration_start, pull_s, compute_s, sleep_s, push_s, *loss});
    }
    if (log_every > 0 && m.iterations % log_every == 0 && m.iterations % options_.eval_every != 0) {
      LogProgress(m, now_s(), *loss);
    }
  }
  m.job_completion_s = now_s();
  m.wait_s = m.pull_s + m.push_s;
  if (Status closed = backend_.Close(); !closed.ok()) return closed;
  m.epochs = batcher_->epoch();

  // The final model, unless the last point already measured it.
  if (evaluates_ && last_eval_step != m.iterations) {
    TimelinePoint point;
    point.step = m.iterations;
    point.time_s = m.job_completion_s;
    point.train_loss = loss_count > 0 ? loss_sum / static_cast<double>(loss_count) : kNaN;
    s = Evaluate(&m, &point);
    if (!s.ok()) return s;
    m.timeline.push_back(point);
  }
  // Per iteration: compute, and communication (Pull + Push, waiting for the
  // others included) with its share of a step (compute + sleep + wait).
  const double per_step = m.compute_s + m.straggler_sleep_s + m.wait_s;
  const std::string per_iteration =
      m.iterations > 0
          ? fmt::format(" per iteration: compute={:.2f}ms comm={:.2f}ms ({:.1f}% of a step)",
                        1e3 * m.compute_s / static_cast<double>(m.iterations),
                        1e3 * m.wait_s / static_cast<double>(m.iterations),
                        per_step > 0 ? 100.0 * m.wait_s / per_step : 0.0)
          : std::string();
  spdlog::info(
      "[{} rank {}/{}] stopped ({}) after {} iterations in {:.2f}s: compute={:.2f}s "
      "wait={:.2f}s sleep={:.2f}s{}{}",
      m.backend, m.rank, m.world_size, StopReasonName(m.stop_reason), m.iterations,
      m.job_completion_s, m.compute_s, m.wait_s, m.straggler_sleep_s,
      std::isfinite(m.final_accuracy) ? fmt::format(" accuracy={:.4f}", m.final_accuracy)
                                      : std::string(),
      per_iteration);
  return m;
}

}  // namespace serene::train
