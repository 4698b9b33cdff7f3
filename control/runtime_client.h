// RuntimeClient: a typed, blocking client of a switch's runtime API
// (control/runtime.proto, docs/control.md), for serene-ctl, controllers, the
// experiment runner and tests.
//
// Every call presents the token (if any) as `authorization: Bearer <token>`
// and has a deadline (`timeout`), so no call waits forever on a switch that
// is gone. gRPC errors come back as Status with the server's message, the
// code mapped (INVALID_ARGUMENT -> kInvalidArgument, NOT_FOUND -> kNotFound,
// UNAUTHENTICATED -> kUnauthenticated, UNAVAILABLE and a missed deadline ->
// kUnavailable naming the address, ...).
//
// Thread-safe: calls may be made from several threads at once; CancelStreams()
// may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "control/runtime.pb.h"

namespace grpc {
class Channel;
class ClientContext;
class Status;
}  // namespace grpc

namespace serene::control {

namespace v1 = ::serene::control::v1;

class RuntimeClient {
 public:
  // Creates a channel to `address` ("127.0.0.1:7001", "[::1]:7001",
  // "host:port"). Does not connect yet: the first call does.
  static Result<std::unique_ptr<RuntimeClient>> Create(
      const std::string& address, std::string token,
      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~RuntimeClient();

  const std::string& address() const { return address_; }

  Result<std::vector<v1::JobSummary>> ListJobs();
  // `job.key` must be 0; the created job (with its fresh key) comes back.
  Result<v1::Job> CreateJob(const v1::Job& job);
  Status DeleteJob(uint32_t job);
  Result<v1::PolicyState> GetPolicy(uint32_t job);
  Result<v1::SetPolicyResponse> SetPolicy(uint32_t job, const v1::Rule& rule,
                                          std::optional<uint32_t> effective_clock);
  Result<v1::CancelPolicyChangeResponse> CancelPolicyChange(uint32_t job,
                                                            std::optional<uint32_t> epoch);
  Result<v1::EvictResponse> Evict(uint32_t job, uint32_t rank);
  Result<v1::FinishResponse> Finish(uint32_t job);
  // Reports that `rank` spent `pause` outside its training steps (an
  // evaluation); returns the rank's totals.
  Result<v1::ReportPauseResponse> ReportPause(uint32_t job, uint32_t rank,
                                              std::chrono::nanoseconds pause);
  Result<v1::JobTelemetry> GetTelemetry(uint32_t job);

  // Streams snapshots every `period`, calling on_snapshot for each, until it
  // returns false or CancelStreams() is called (both: OK), or the stream
  // ends (the job was deleted: NotFound; the switch went away: Unavailable).
  // Blocks; no per-call deadline, but a switch that stops answering for
  // max(10 s, 3 periods) ends the stream with Unavailable.
  Status StreamTelemetry(uint32_t job, std::chrono::milliseconds period,
                         const std::function<bool(const v1::JobTelemetry&)>& on_snapshot);

  // Ends every StreamTelemetry in progress (they return OK) and makes later
  // ones return at once.
  void CancelStreams();

 private:
  RuntimeClient(std::string address, std::string token, std::chrono::milliseconds timeout,
                std::shared_ptr<grpc::Channel> channel);
  void Prepare(grpc::ClientContext* ctx, bool with_deadline) const;
  // One unary call with the token and the deadline; the status mapped.
  template <typename Response, typename Request, typename Method>
  Result<Response> Call(Method method, const Request& request);

  const std::string address_;
  const std::string token_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  struct Stub;
  std::unique_ptr<Stub> stub_;

  std::mutex streams_mu_;
  std::set<grpc::ClientContext*> streams_;  // guarded by streams_mu_
  bool cancelled_ = false;                   // guarded by streams_mu_
};

}  // namespace serene::control
