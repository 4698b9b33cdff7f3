// MetricsHttpServer: serves the operator metrics over HTTP for Prometheus
// (`serene-switch --metrics HOST:PORT`, docs/metrics.md).
//
//   GET /metrics  -> 200, render() as text/plain; version=0.0.4; charset=utf-8
//   GET /         -> 200, a one-line pointer to /metrics
//   anything else -> 404
//   with a token (MetricsHttpOptions::token), any request without
//   "Authorization: Bearer TOKEN" -> 401
//   while max_queued connections wait for a worker -> 503 (Retry-After: 1)
//
// The server runs on threads of its own (an accept thread and two connection
// workers), never on the data plane's loops. The connections waiting for a
// worker are bounded (switch/bounded_task_queue.h): past the bound the accept
// thread answers 503 itself, without rendering, so that a flood of clients
// costs bounded memory and never queues scrapes. Scrapes are serialized: render()
// is called by one thread at a time, so it need not be reentrant, but it
// runs concurrently with everything else in the process and must read shared
// state through thread-safe APIs (RenderMetrics in switch/metrics_exposition.h
// does). If render() throws, the scrape gets a 500 and the server goes on.
//
// The HTTP library (cpp-httplib) stays inside metrics_http.cc. Note that it
// sets SIGPIPE to SIG_IGN for the whole process when a server is created
// (a client closing early must not kill the daemon); writes to a closed pipe
// then fail with EPIPE instead.
//
// Thread safety: port() and Stop() are safe from any thread; Stop() may be
// called more than once and is called by the destructor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace serene::switchd {

struct MetricsHttpOptions {
  // The bearer token every request must present ("Authorization: Bearer
  // TOKEN", compared in constant time); "" = no authentication.
  std::string token;
  // Connection workers: a scrape is one request every few seconds; two let a
  // second client in while a first holds a keep-alive connection.
  size_t workers = 2;
  // Connections that may wait for a worker; one more is answered 503.
  size_t max_queued = 8;
};

class MetricsHttpServer {
 public:
  // Binds host:port (port 0: an ephemeral port, see port()) and starts
  // serving. `host` is an address or name the resolver accepts ("0.0.0.0",
  // "::" for every IPv6 and IPv4 address, "127.0.0.1"). Fails, serving
  // nothing, when the address cannot be bound; the message names the address
  // and the reason, e.g. "cannot serve metrics on 127.0.0.1:80: Permission
  // denied".
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host, uint16_t port,
                                                          std::function<std::string()> render,
                                                          MetricsHttpOptions options = {});

  ~MetricsHttpServer();  // stops
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The bound TCP port (the chosen one when Start() was given port 0).
  uint16_t port() const;

  // Closes the listening socket and joins the server's threads; a scrape in
  // progress is finished first. Returns within about two seconds (the
  // longest a connection worker waits on an idle or slow client). Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace serene::switchd
