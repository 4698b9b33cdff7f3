#include "control/runtime_service.h"

#include <chrono>
#include <string_view>

#include "common/secure_random.h"
#include "control/grpc_status.h"
#include "control/telemetry_convert.h"

namespace serene::control {
namespace {

constexpr uint32_t kDefaultPeriodMs = 1000;
constexpr uint32_t kMinPeriodMs = 10;
constexpr uint32_t kMaxPeriodMs = 60000;
constexpr uint64_t kMaxPauseNs = 3'600'000'000'000;  // an hour

// Compares without an early exit, so the time taken does not tell how much
// of a guessed token was right.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

uint64_t UnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

RuntimeService::RuntimeService(SwitchTarget* target, std::string token)
    : target_(target), token_(std::move(token)) {}

void RuntimeService::Shutdown() {
  {
    std::lock_guard lock(shutdown_mu_);
    shutdown_ = true;
  }
  shutdown_cv_.notify_all();
}

RuntimeApiCounters RuntimeService::counters() const {
  RuntimeApiCounters c;
  c.calls = calls_.load(std::memory_order_relaxed);
  c.unauthenticated = unauthenticated_.load(std::memory_order_relaxed);
  c.invalid_argument = invalid_argument_.load(std::memory_order_relaxed);
  c.failed = failed_.load(std::memory_order_relaxed);
  c.policy_changes = policy_changes_.load(std::memory_order_relaxed);
  c.evictions = evictions_.load(std::memory_order_relaxed);
  c.streams = streams_.load(std::memory_order_relaxed);
  return c;
}

grpc::Status RuntimeService::Admit(const grpc::ServerContext& ctx) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (token_.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find(kTokenMetadataKey);
  const std::string_view prefix = kTokenPrefix;
  if (it != md.end()) {
    const std::string_view value(it->second.data(), it->second.size());
    if (value.starts_with(prefix) && ConstantTimeEquals(value.substr(prefix.size()), token_)) {
      return grpc::Status::OK;
    }
  }
  unauthenticated_.fetch_add(1, std::memory_order_relaxed);
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      it == md.end()
                          ? "this switch requires a token: send metadata 'authorization: Bearer "
                            "<token>' (serene-ctl --token-file FILE)"
                          : "wrong token");
}

grpc::Status RuntimeService::Fail(const Status& s) {
  if (s.code() == Status::Code::kInvalidArgument) {
    invalid_argument_.fetch_add(1, std::memory_order_relaxed);
  } else {
    failed_.fetch_add(1, std::memory_order_relaxed);
  }
  return ToGrpcStatus(s);
}

Status RuntimeService::JobId(uint32_t job, uint16_t* out) {
  if (job < 1 || job > 65535) {
    return Status::InvalidArgument("job " + std::to_string(job) + ": expected a job id 1..65535");
  }
  *out = static_cast<uint16_t>(job);
  return Status::Ok();
}

Result<v1::JobTelemetry> RuntimeService::Snapshot(uint16_t job) const {
  auto t = target_->Telemetry(job);
  if (!t.ok()) return t.status();
  v1::JobTelemetry proto = TelemetryToProto(*t, target_->Now(), UnixMillis());
  pauses_.Fill(job, &proto);
  return proto;
}

grpc::Status RuntimeService::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest*,
                                      v1::ListJobsResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  for (uint16_t id : target_->JobIds()) {
    auto t = target_->Telemetry(id);
    if (!t.ok()) continue;  // deleted meanwhile
    v1::JobSummary* s = resp->add_jobs();
    *s->mutable_job() = JobToProto(t->config);
    *s->mutable_job()->mutable_policy() = RuleToProto(t->active);
    s->set_live_workers(t->live_workers);
    s->set_low(ClockValue(t->low));
    s->set_high(ClockValue(t->high));
    s->set_epoch(t->active_epoch);
    s->set_swap_pending(t->swap_pending);
    s->set_finished(t->finished);
    s->set_saturated(t->saturated);
  }
  return grpc::Status::OK;
}

grpc::Status RuntimeService::CreateJob(grpc::ServerContext* ctx, const v1::CreateJobRequest* req,
                                       v1::CreateJobResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  if (!req->has_job()) return Fail(Status::InvalidArgument("job: missing"));
  auto config = JobFromProto(req->job());
  if (!config.ok()) return Fail(config.status());
  Result<uint32_t> key = DrawJobKey();
  if (!key.ok()) return Fail(key.status());
  config->key = *key;
  // The target admits the job (duplicate id, job limit, memory) before it
  // allocates anything.
  Status s = target_->CreateJob(*config);
  if (!s.ok()) {
    if (s.code() == Status::Code::kFailedPrecondition) {
      s = Status::ResourceExhausted(s.message());  // too many jobs
    }
    return Fail(s);
  }
  pauses_.Forget(config->id);
  *resp->mutable_job() = JobToProto(*config);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                                       v1::DeleteJobResponse*) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  Status s = JobId(req->job(), &job);
  if (s.ok()) s = target_->DeleteJob(job);
  if (s.ok()) pauses_.Forget(job);
  return s.ok() ? grpc::Status::OK : Fail(s);
}

grpc::Status RuntimeService::GetPolicy(grpc::ServerContext* ctx, const v1::GetPolicyRequest* req,
                                       v1::PolicyState* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  auto t = target_->Telemetry(job);
  if (!t.ok()) return Fail(t.status());
  *resp = PolicyToProto(*t);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::SetPolicy(grpc::ServerContext* ctx, const v1::SetPolicyRequest* req,
                                       v1::SetPolicyResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  if (!req->has_rule()) return Fail(Status::InvalidArgument("rule: missing"));
  auto config = target_->JobConfig(job);
  if (!config.ok()) return Fail(config.status());
  auto rule = RuleFromProto(req->rule(), config->workers, "rule");
  if (!rule.ok()) return Fail(rule.status());
  std::optional<uint32_t> at;
  if (req->has_effective_clock()) at = req->effective_clock();
  auto change = target_->SetPolicy(job, *rule, at);
  if (!change.ok()) return Fail(change.status());
  policy_changes_.fetch_add(1, std::memory_order_relaxed);
  resp->set_epoch(change->change.epoch);
  resp->set_effective_clock(change->change.effective_clock);
  resp->set_released(change->released);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::CancelPolicyChange(grpc::ServerContext* ctx,
                                                const v1::CancelPolicyChangeRequest* req,
                                                v1::CancelPolicyChangeResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  // The rule is read first: once cancelled, the idle bank is no longer shown.
  auto t = target_->Telemetry(job);
  if (!t.ok()) return Fail(t.status());
  std::optional<uint32_t> epoch;
  if (req->has_epoch()) epoch = req->epoch();
  auto cancelled = target_->CancelPolicyChange(job, epoch);
  if (!cancelled.ok()) return Fail(cancelled.status());
  resp->set_epoch(cancelled->epoch);
  resp->set_effective_clock(cancelled->effective_clock);
  if (t->swap_pending && t->next_epoch == cancelled->epoch) {
    *resp->mutable_rule() = RuleToProto(t->next);
  }
  return grpc::Status::OK;
}

grpc::Status RuntimeService::Evict(grpc::ServerContext* ctx, const v1::EvictRequest* req,
                                   v1::EvictResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  if (req->rank() > 65535) {
    return Fail(
        Status::InvalidArgument("rank " + std::to_string(req->rank()) + ": expected 0..workers-1"));
  }
  auto eviction = target_->Evict(job, static_cast<uint16_t>(req->rank()));
  if (!eviction.ok()) return Fail(eviction.status());
  if (eviction->was_live) evictions_.fetch_add(1, std::memory_order_relaxed);
  resp->set_was_live(eviction->was_live);
  resp->set_released(eviction->released);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::Finish(grpc::ServerContext* ctx, const v1::FinishRequest* req,
                                    v1::FinishResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  auto released = target_->Finish(job);
  if (!released.ok()) return Fail(released.status());
  resp->set_released(*released);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::ReportPause(grpc::ServerContext* ctx,
                                         const v1::ReportPauseRequest* req,
                                         v1::ReportPauseResponse* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  auto config = target_->JobConfig(job);
  if (!config.ok()) return Fail(config.status());
  if (req->rank() >= config->workers) {
    return Fail(Status::InvalidArgument("rank " + std::to_string(req->rank()) + ": job " +
                                        std::to_string(job) + " has ranks 0.." +
                                        std::to_string(config->workers - 1)));
  }
  if (req->pause_ns() == 0 || req->pause_ns() > kMaxPauseNs) {
    return Fail(Status::InvalidArgument("pause_ns " + std::to_string(req->pause_ns()) +
                                        ": expected 1.." + std::to_string(kMaxPauseNs) +
                                        " (1 ns to an hour)"));
  }
  const PauseLedger::Totals totals = pauses_.Add(job, req->rank(), req->pause_ns());
  resp->set_paused_ns(totals.paused_ns);
  resp->set_pauses(totals.pauses);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::GetTelemetry(grpc::ServerContext* ctx,
                                          const v1::GetTelemetryRequest* req,
                                          v1::JobTelemetry* resp) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  auto t = Snapshot(job);
  if (!t.ok()) return Fail(t.status());
  *resp = std::move(*t);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::StreamTelemetry(grpc::ServerContext* ctx,
                                             const v1::StreamTelemetryRequest* req,
                                             grpc::ServerWriter<v1::JobTelemetry>* writer) {
  if (grpc::Status a = Admit(*ctx); !a.ok()) return a;
  uint16_t job = 0;
  if (Status s = JobId(req->job(), &job); !s.ok()) return Fail(s);
  uint32_t period_ms = req->period_ms() == 0 ? kDefaultPeriodMs : req->period_ms();
  if (period_ms < kMinPeriodMs || period_ms > kMaxPeriodMs) {
    return Fail(Status::InvalidArgument("period_ms " + std::to_string(req->period_ms()) +
                                        ": expected " + std::to_string(kMinPeriodMs) + ".." +
                                        std::to_string(kMaxPeriodMs) +
                                        " (0 = " + std::to_string(kDefaultPeriodMs) + ")"));
  }
  streams_.fetch_add(1, std::memory_order_relaxed);
  const auto period = std::chrono::milliseconds(period_ms);
  auto next = std::chrono::steady_clock::now();
  while (true) {
    auto t = Snapshot(job);
    if (!t.ok()) return ToGrpcStatus(t.status());     // the job was deleted
    if (!writer->Write(*t)) return grpc::Status::OK;  // the client went away
    next += period;
    std::unique_lock lock(shutdown_mu_);
    // Wake at the next period, or every 100 ms to notice a cancelled call.
    while (!shutdown_ && !ctx->IsCancelled() && std::chrono::steady_clock::now() < next) {
      shutdown_cv_.wait_until(
          lock, std::min(next, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    }
    if (shutdown_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the switch is stopping");
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    // A slow reader does not make snapshots pile up: skip missed periods.
    const auto now = std::chrono::steady_clock::now();
    if (now > next + period) next = now;
  }
}

}  // namespace serene::control
