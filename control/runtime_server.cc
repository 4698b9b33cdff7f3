#include "control/runtime_server.h"

#include <grpcpp/grpcpp.h>

#include "net/address.h"

namespace serene::control {

Status CheckControlAddress(const std::string& address, bool have_token) {
  const std::string expected =
      "expected HOST:PORT with a numeric host or localhost, e.g. 127.0.0.1:7001 or [::1]:7001";
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("control address '" + address + "': " + expected);
  }
  std::string host = address.substr(0, colon);
  bool loopback = false;
  if (host == "localhost") {
    loopback = true;
    auto ep = net::ParseEndpoint("127.0.0.1" + address.substr(colon));
    if (!ep.ok()) return Status::InvalidArgument("control address '" + address + "': " + expected);
  } else {
    auto ep = net::ParseEndpoint(address);
    if (!ep.ok()) {
      return Status::InvalidArgument("control address '" + address + "': " + expected + " (" +
                                     ep.status().message() + ")");
    }
    loopback = net::IsLoopback(*ep);
  }
  if (!loopback && !have_token) {
    return Status::InvalidArgument(
        "control address '" + address +
        "' is not a loopback address: whoever reaches it could create, change and delete jobs. "
        "Give the switch a token (--token-file FILE) or listen on 127.0.0.1");
  }
  return Status::Ok();
}

Result<std::unique_ptr<RuntimeServer>> RuntimeServer::Start(dataplane::Pipeline* pipeline,
                                                            PipelineTarget::Sender send,
                                                            PipelineTarget::NowFn now,
                                                            const RuntimeServerOptions& options) {
  auto target = std::make_unique<PipelineTarget>(pipeline, std::move(send), std::move(now));
  auto server = Start(target.get(), options);
  if (server.ok()) (*server)->owned_target_ = std::move(target);
  return server;
}

Result<std::unique_ptr<RuntimeServer>> RuntimeServer::Start(SwitchTarget* target,
                                                            const RuntimeServerOptions& options) {
  Status s = CheckControlAddress(options.address, !options.token.empty());
  if (!s.ok()) return s;
  std::unique_ptr<RuntimeServer> server(new RuntimeServer());
  server->service_ = std::make_unique<RuntimeService>(target, options.token);
  grpc::ServerBuilder builder;
  int port = 0;
  // gRPC sets SO_REUSEPORT by default: a second switch on the same port
  // would then listen beside the first one, and each call would reach one
  // of them at random, so that a controller steers the wrong switch.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return Status::Unavailable("cannot serve the runtime API on " + options.address +
                               ": the address is in use or not local (try another --control "
                               "port)");
  }
  const size_t colon = options.address.rfind(':');
  server->address_ = options.address.substr(0, colon) + ":" + std::to_string(port);
  return server;
}

RuntimeServer::~RuntimeServer() { Stop(); }

void RuntimeServer::Stop() {
  std::lock_guard lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  service_->Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
  }
}

}  // namespace serene::control
