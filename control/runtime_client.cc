#include "control/runtime_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <thread>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "control/grpc_status.h"
#include "control/runtime.grpc.pb.h"

namespace serene::control {

struct RuntimeClient::Stub {
  std::unique_ptr<v1::Runtime::Stub> stub;
};

Result<std::unique_ptr<RuntimeClient>> RuntimeClient::Create(const std::string& address,
                                                             std::string token,
                                                             std::chrono::milliseconds timeout) {
  if (address.empty()) {
    return Status::InvalidArgument("the control address is empty; expected HOST:PORT, e.g. "
                                   "127.0.0.1:7001");
  }
  grpc::ChannelArguments args;
  // Fail fast on a switch that is not there instead of waiting for it.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  auto channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (channel == nullptr) {
    return Status::InvalidArgument("cannot create a channel to '" + address + "'");
  }
  return std::unique_ptr<RuntimeClient>(
      new RuntimeClient(address, std::move(token), timeout, std::move(channel)));
}

RuntimeClient::RuntimeClient(std::string address, std::string token,
                             std::chrono::milliseconds timeout,
                             std::shared_ptr<grpc::Channel> channel)
    : address_(std::move(address)),
      token_(std::move(token)),
      timeout_(timeout),
      channel_(std::move(channel)),
      stub_(std::make_unique<Stub>()) {
  stub_->stub = v1::Runtime::NewStub(channel_);
}

RuntimeClient::~RuntimeClient() = default;

void RuntimeClient::Prepare(grpc::ClientContext* ctx, bool with_deadline) const {
  if (!token_.empty()) ctx->AddMetadata(kTokenMetadataKey, kTokenPrefix + token_);
  if (with_deadline) ctx->set_deadline(std::chrono::system_clock::now() + timeout_);
}

template <typename Response, typename Request, typename Method>
Result<Response> RuntimeClient::Call(Method method, const Request& request) {
  grpc::ClientContext ctx;
  Prepare(&ctx, true);
  Response response;
  grpc::Status s = (stub_->stub.get()->*method)(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s, address_);
  return response;
}

Result<std::vector<v1::JobSummary>> RuntimeClient::ListJobs() {
  v1::ListJobsRequest req;
  auto r = Call<v1::ListJobsResponse>(&v1::Runtime::Stub::ListJobs, req);
  if (!r.ok()) return r.status();
  return std::vector<v1::JobSummary>(r->jobs().begin(), r->jobs().end());
}

Result<v1::Job> RuntimeClient::CreateJob(const v1::Job& job) {
  v1::CreateJobRequest req;
  *req.mutable_job() = job;
  auto r = Call<v1::CreateJobResponse>(&v1::Runtime::Stub::CreateJob, req);
  if (!r.ok()) return r.status();
  return r->job();
}

Status RuntimeClient::DeleteJob(uint32_t job) {
  v1::DeleteJobRequest req;
  req.set_job(job);
  return Call<v1::DeleteJobResponse>(&v1::Runtime::Stub::DeleteJob, req).status();
}

Result<v1::PolicyState> RuntimeClient::GetPolicy(uint32_t job) {
  v1::GetPolicyRequest req;
  req.set_job(job);
  return Call<v1::PolicyState>(&v1::Runtime::Stub::GetPolicy, req);
}

Result<v1::SetPolicyResponse> RuntimeClient::SetPolicy(uint32_t job, const v1::Rule& rule,
                                                       std::optional<uint32_t> effective_clock) {
  v1::SetPolicyRequest req;
  req.set_job(job);
  *req.mutable_rule() = rule;
  if (effective_clock) req.set_effective_clock(*effective_clock);
  return Call<v1::SetPolicyResponse>(&v1::Runtime::Stub::SetPolicy, req);
}

Result<v1::CancelPolicyChangeResponse> RuntimeClient::CancelPolicyChange(
    uint32_t job, std::optional<uint32_t> epoch) {
  v1::CancelPolicyChangeRequest req;
  req.set_job(job);
  if (epoch) req.set_epoch(*epoch);
  return Call<v1::CancelPolicyChangeResponse>(&v1::Runtime::Stub::CancelPolicyChange, req);
}

Result<v1::EvictResponse> RuntimeClient::Evict(uint32_t job, uint32_t rank) {
  v1::EvictRequest req;
  req.set_job(job);
  req.set_rank(rank);
  return Call<v1::EvictResponse>(&v1::Runtime::Stub::Evict, req);
}

Result<v1::FinishResponse> RuntimeClient::Finish(uint32_t job) {
  v1::FinishRequest req;
  req.set_job(job);
  return Call<v1::FinishResponse>(&v1::Runtime::Stub::Finish, req);
}

Result<v1::ReportPauseResponse> RuntimeClient::ReportPause(uint32_t job, uint32_t rank,
                                                           std::chrono::nanoseconds pause) {
  v1::ReportPauseRequest req;
  req.set_job(job);
  req.set_rank(rank);
  req.set_pause_ns(static_cast<uint64_t>(std::max<int64_t>(0, pause.count())));
  return Call<v1::ReportPauseResponse>(&v1::Runtime::Stub::ReportPause, req);
}

Result<v1::JobTelemetry> RuntimeClient::GetTelemetry(uint32_t job) {
  v1::GetTelemetryRequest req;
  req.set_job(job);
  return Call<v1::JobTelemetry>(&v1::Runtime::Stub::GetTelemetry, req);
}

Status RuntimeClient::StreamTelemetry(
    uint32_t job, std::chrono::milliseconds period,
    const std::function<bool(const v1::JobTelemetry&)>& on_snapshot) {
  grpc::ClientContext ctx;
  Prepare(&ctx, false);
  {
    std::lock_guard lock(streams_mu_);
    if (cancelled_) return Status::Ok();
    streams_.insert(&ctx);
  }
  v1::StreamTelemetryRequest req;
  req.set_job(job);
  req.set_period_ms(static_cast<uint32_t>(period.count()));
  auto reader = stub_->stub->StreamTelemetry(&ctx, req);

  // A watchdog: a switch that stops answering (killed, partitioned) would
  // leave Read() blocked forever on an idle connection.
  const auto silence = std::max<std::chrono::milliseconds>(std::chrono::seconds(10), 3 * period);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, silent = false;
  auto last = std::chrono::steady_clock::now();
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    while (!done) {
      if (std::chrono::steady_clock::now() - last > silence) {
        silent = true;
        ctx.TryCancel();
        return;
      }
      cv.wait_for(lock, std::chrono::milliseconds(200));
    }
  });

  v1::JobTelemetry snapshot;
  bool stopped_by_caller = false;
  while (reader->Read(&snapshot)) {
    {
      std::lock_guard lock(mu);
      last = std::chrono::steady_clock::now();
    }
    if (!on_snapshot(snapshot)) {
      stopped_by_caller = true;
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  bool cancelled = false;
  {
    std::lock_guard lock(streams_mu_);
    streams_.erase(&ctx);
    cancelled = cancelled_;
  }
  if (silent) {
    return Status::Unavailable("the switch's runtime API at " + address_ +
                               " sent no telemetry for " +
                               std::to_string(silence.count() / 1000) + " s");
  }
  if (stopped_by_caller || cancelled || s.ok()) return Status::Ok();
  return FromGrpcStatus(s, address_);
}

void RuntimeClient::CancelStreams() {
  std::lock_guard lock(streams_mu_);
  cancelled_ = true;
  for (grpc::ClientContext* ctx : streams_) ctx->TryCancel();
}

}  // namespace serene::control
