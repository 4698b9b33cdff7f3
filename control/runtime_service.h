// RuntimeService: the runtime API (control/runtime.proto) over a switch's
// data plane — what `serene-switch --control` serves. It translates typed
// requests into the target's control operations (CreateJob, SetPolicy into
// the idle bank, Evict, Finish, Telemetry; control/switch_target.h), which
// put the packets they emit (RELEASEs of ranks a change unblocks) on the
// wire themselves.
//
// Every call is authenticated first when a token is set: a missing or wrong
// token is UNAUTHENTICATED, changes nothing and is counted. Bad arguments are
// INVALID_ARGUMENT naming the field and the value, checked before anything
// changes.
//
// Thread-safe: gRPC calls it from its own threads; the target serializes
// per job.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/status.h"
#include "control/pause_ledger.h"
#include "control/runtime.grpc.pb.h"
#include "control/switch_target.h"

namespace serene::control {

// What the runtime API did, for the switch's metrics and exit report.
struct RuntimeApiCounters {
  uint64_t calls = 0;             // every RPC, authenticated or not
  uint64_t unauthenticated = 0;   // refused: missing or wrong token
  uint64_t invalid_argument = 0;  // refused: bad arguments
  uint64_t failed = 0;            // other errors (not found, failed precondition, ...)
  uint64_t policy_changes = 0;    // SetPolicy calls that installed a rule
  uint64_t evictions = 0;         // Evict calls that took a live rank out
  uint64_t streams = 0;           // telemetry streams opened
};

class RuntimeService final : public v1::Runtime::Service {
 public:
  // `target` must outlive the service. Empty `token`: no authentication
  // (the server only allows that on a loopback address).
  RuntimeService(SwitchTarget* target, std::string token);

  // Ends every telemetry stream (they finish with UNAVAILABLE) and makes new
  // ones end at once; call before shutting the gRPC server down.
  void Shutdown();

  RuntimeApiCounters counters() const;

  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                        v1::ListJobsResponse* resp) override;
  grpc::Status CreateJob(grpc::ServerContext* ctx, const v1::CreateJobRequest* req,
                         v1::CreateJobResponse* resp) override;
  grpc::Status DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                         v1::DeleteJobResponse* resp) override;
  grpc::Status GetPolicy(grpc::ServerContext* ctx, const v1::GetPolicyRequest* req,
                         v1::PolicyState* resp) override;
  grpc::Status SetPolicy(grpc::ServerContext* ctx, const v1::SetPolicyRequest* req,
                         v1::SetPolicyResponse* resp) override;
  grpc::Status CancelPolicyChange(grpc::ServerContext* ctx,
                                  const v1::CancelPolicyChangeRequest* req,
                                  v1::CancelPolicyChangeResponse* resp) override;
  grpc::Status Evict(grpc::ServerContext* ctx, const v1::EvictRequest* req,
                     v1::EvictResponse* resp) override;
  grpc::Status Finish(grpc::ServerContext* ctx, const v1::FinishRequest* req,
                      v1::FinishResponse* resp) override;
  grpc::Status ReportPause(grpc::ServerContext* ctx, const v1::ReportPauseRequest* req,
                           v1::ReportPauseResponse* resp) override;
  grpc::Status GetTelemetry(grpc::ServerContext* ctx, const v1::GetTelemetryRequest* req,
                            v1::JobTelemetry* resp) override;
  grpc::Status StreamTelemetry(grpc::ServerContext* ctx, const v1::StreamTelemetryRequest* req,
                               grpc::ServerWriter<v1::JobTelemetry>* writer) override;

 private:
  // Authenticates and counts the call; OK to go on.
  grpc::Status Admit(const grpc::ServerContext& ctx);
  // Counts a failed call's status and converts it.
  grpc::Status Fail(const Status& s);
  // Checks a job id field (1..65535).
  static Status JobId(uint32_t job, uint16_t* out);
  Result<v1::JobTelemetry> Snapshot(uint16_t job) const;

  SwitchTarget* const target_;
  const std::string token_;
  PauseLedger pauses_;  // ReportPause's totals, added to every snapshot

  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  bool shutdown_ = false;  // guarded by shutdown_mu_

  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> unauthenticated_{0};
  std::atomic<uint64_t> invalid_argument_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> policy_changes_{0};
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> streams_{0};
};

}  // namespace serene::control
