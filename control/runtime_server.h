// RuntimeServer: the gRPC server of the runtime API, owned by the switch
// daemon (`serene-switch --control HOST:PORT [--token-file F]`).
//
// Refuses to listen on an address other than loopback without a token:
// whoever reaches the API can change jobs, so a non-loopback control address
// must be protected.
//
// Thread-safe: Stop() may be called from any thread, more than once.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "control/pipeline_target.h"
#include "control/runtime_service.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace serene::control {

inline constexpr const char* kDefaultControlAddress = "127.0.0.1:7001";

struct RuntimeServerOptions {
  std::string address = kDefaultControlAddress;  // HOST:PORT; port 0 = ephemeral
  std::string token;                             // empty: no authentication (loopback only)
};

// Checks a control address "HOST:PORT" ("[v6]:PORT"): numeric or localhost
// host, port 0..65535, and a token unless the host is loopback.
// InvalidArgument saying what to do.
Status CheckControlAddress(const std::string& address, bool have_token);

class RuntimeServer {
 public:
  // Builds the service over `target` (which must outlive the server) and
  // starts serving. Errors: InvalidArgument (address, see
  // CheckControlAddress), Unavailable if the address cannot be bound.
  static Result<std::unique_ptr<RuntimeServer>> Start(SwitchTarget* target,
                                                      const RuntimeServerOptions& options);
  // The software switch's: the service over `pipeline` (a PipelineTarget the
  // server owns), its packets sent through `send`.
  static Result<std::unique_ptr<RuntimeServer>> Start(dataplane::Pipeline* pipeline,
                                                      PipelineTarget::Sender send,
                                                      PipelineTarget::NowFn now,
                                                      const RuntimeServerOptions& options);
  ~RuntimeServer();  // stops

  // "127.0.0.1:7001": the address it listens on (the real port if 0 was asked).
  const std::string& address() const { return address_; }

  // Ends telemetry streams, then shuts the server down (in-flight calls get
  // up to a second). Idempotent.
  void Stop();

  RuntimeApiCounters counters() const { return service_->counters(); }

 private:
  RuntimeServer() = default;

  std::unique_ptr<SwitchTarget> owned_target_;  // the PipelineTarget of the second Start
  std::unique_ptr<RuntimeService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace serene::control
