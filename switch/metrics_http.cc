#include "switch/metrics_http.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "switch/bounded_task_queue.h"

namespace serene::switchd {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextContentType[] = "text/plain; charset=utf-8";

// Bounds on how long a worker waits for a client, and so on Stop().
constexpr time_t kReadTimeoutSec = 2;
constexpr time_t kWriteTimeoutSec = 5;
constexpr time_t kKeepAliveTimeoutSec = 1;

// "127.0.0.1:9100", "[::1]:9100".
std::string HostPort(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// httplib's connection queue, bounded.
class BoundedQueueAdapter : public httplib::TaskQueue {
 public:
  BoundedQueueAdapter(size_t workers, size_t capacity) : queue_(workers, capacity) {}
  void enqueue(std::function<void()> fn) override { queue_.Enqueue(std::move(fn)); }
  void shutdown() override { queue_.Shutdown(); }

 private:
  BoundedTaskQueue queue_;
};

// Equal strings, in a time that does not depend on where they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Answers a shed connection (503) or an unauthenticated request (401) before
// any route runs; everything else goes on to the routes.
httplib::Server::HandlerResponse Gate(const std::string& token, const httplib::Request& req,
                                      httplib::Response& res) {
  if (BoundedTaskQueue::Shedding()) {
    res.status = 503;
    res.set_header("Retry-After", "1");
    res.set_header("Connection", "close");
    res.set_content("too many scrapes waiting; try again\n", kTextContentType);
    return httplib::Server::HandlerResponse::Handled;
  }
  if (!token.empty() &&
      !ConstantTimeEquals(req.get_header_value("Authorization"), "Bearer " + token)) {
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"serene-switch metrics\"");
    res.set_content(
        "unauthorized: send Authorization: Bearer <token> (the switch's "
        "--metrics-token-file)\n",
        kTextContentType);
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// httplib's bind reports failure as a bare `false`. To say why, do what it
// does again (resolve, socket, SO_REUSEADDR, bind, listen) and report the
// first error. Racy only in the harmless direction: if the address was
// released in between, the reason is vaguer.
std::string BindFailureReason(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) return std::string("cannot resolve the host: ") + gai_strerror(rc);
  std::string reason = "the address cannot be bound";
  bool have_reason = false;
  for (addrinfo* a = result; a != nullptr && !have_reason; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      reason = ErrnoText(errno);
      have_reason = true;
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      reason = ErrnoText(errno);
      have_reason = true;
    }
    close(fd);
  }
  freeaddrinfo(result);
  return reason;
}

}  // namespace

struct MetricsHttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  uint16_t port = 0;
  std::function<std::string()> render;
  std::mutex render_mu;  // one scrape at a time
  std::mutex stop_mu;    // Stop()
  bool stopped = false;  // GUARDED_BY(stop_mu)

  void Metrics(httplib::Response& res) {
    std::string body;
    try {
      std::lock_guard lock(render_mu);
      body = render();
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(std::string("cannot render metrics: ") + e.what() + "\n", kTextContentType);
      return;
    } catch (...) {
      res.status = 500;
      res.set_content("cannot render metrics\n", kTextContentType);
      return;
    }
    res.set_content(std::move(body), kMetricsContentType);
  }
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

uint16_t MetricsHttpServer::port() const { return impl_->port; }

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, uint16_t port, std::function<std::string()> render,
    MetricsHttpOptions options) {
  const std::string where = "cannot serve metrics on " + HostPort(host, port) + ": ";
  // httplib reports some failures by exceptions (std::regex, std::thread):
  // none may cross this API.
  try {
    // The owner exists before the thread does, so nothing that can throw
    // comes between starting the thread and handing it over.
    std::unique_ptr<MetricsHttpServer> owner(new MetricsHttpServer(std::make_unique<Impl>()));
    Impl* impl = owner->impl_.get();
    impl->render = std::move(render);
    httplib::Server& s = impl->server;
    s.Get("/metrics",
          [impl](const httplib::Request&, httplib::Response& res) { impl->Metrics(res); });
    s.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("serene-switch: Prometheus metrics at /metrics\n", kTextContentType);
    });
    s.Get(".*", [](const httplib::Request& req, httplib::Response& res) {
      res.status = 404;
      res.set_content("not found: " + req.path + " (metrics are at /metrics)\n", kTextContentType);
    });
    s.set_pre_routing_handler(
        [token = options.token](const httplib::Request& req, httplib::Response& res) {
          return Gate(token, req, res);
        });
    const size_t workers = std::max<size_t>(1, options.workers);
    const size_t max_queued = options.max_queued;
    s.new_task_queue = [workers, max_queued] {
      return new BoundedQueueAdapter(workers, max_queued);
    };
    s.set_read_timeout(kReadTimeoutSec, 0);
    s.set_write_timeout(kWriteTimeoutSec, 0);
    s.set_keep_alive_timeout(kKeepAliveTimeoutSec);
    // httplib's default sets SO_REUSEPORT, which would let a second daemon
    // bind the same port and take half of the scrapes. SO_REUSEADDR alone
    // allows a restart over connections in TIME_WAIT and nothing more.
    s.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });

    if (port == 0) {
      const int bound = s.bind_to_any_port(host);
      if (bound <= 0) return Status::Unavailable(where + BindFailureReason(host, port));
      impl->port = static_cast<uint16_t>(bound);
    } else {
      if (!s.bind_to_port(host, port)) {
        return Status::Unavailable(where + BindFailureReason(host, port));
      }
      impl->port = port;
    }

    impl->thread = std::thread([impl] {
      impl->server.listen_after_bind();
      impl->listen_returned.store(true, std::memory_order_release);
    });
    // httplib's stop() does nothing until listen_after_bind() has marked the
    // server running, so wait for that: a Stop() right after Start() must not
    // leave the thread listening forever.
    while (!s.is_running() && !impl->listen_returned.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!s.is_running()) {
      owner->Stop();
      return Status::Internal(where + "the HTTP server stopped as soon as it started");
    }
    return owner;
  } catch (const std::exception& e) {
    return Status::Internal(where + e.what());
  }
}

void MetricsHttpServer::Stop() {
  std::lock_guard lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace serene::switchd
