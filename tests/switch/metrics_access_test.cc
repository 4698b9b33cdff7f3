// Who may scrape /metrics, and how many may wait (docs/metrics.md, "Access"):
// a token when one is set, and a bounded queue of connections whose
// overflow is answered 503 at once instead of piling up.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "switch/metrics_http.h"

namespace serene::switchd {
namespace {

constexpr char kToken[] = "0123456789abcdef-metrics";

httplib::Client ClientFor(uint16_t port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(20, 0);
  return c;
}

TEST(MetricsAccess, WithATokenOnlyBearersOfItAreServed) {
  std::atomic<int> renders{0};
  MetricsHttpOptions options;
  options.token = kToken;
  auto server = MetricsHttpServer::Start(
      "127.0.0.1", 0,
      [&] {
        ++renders;
        return std::string("serene_up 1\n");
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto client = ClientFor((*server)->port());

  auto none = client.Get("/metrics");
  ASSERT_TRUE(none) << httplib::to_string(none.error());
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"serene-switch metrics\"");
  EXPECT_NE(none->body.find("Authorization: Bearer"), std::string::npos) << none->body;

  auto wrong = client.Get("/metrics", {{"Authorization", "Bearer 0123456789abcdef-metricz"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto root = client.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 401) << "every path needs the token";
  EXPECT_EQ(renders.load(), 0) << "nothing is rendered for a stranger";

  auto right = client.Get("/metrics", {{"Authorization", std::string("Bearer ") + kToken}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  EXPECT_EQ(right->body, "serene_up 1\n");
  EXPECT_EQ(renders.load(), 1);
}

// The default server (2 workers, 8 waiting connections) with a scrape that
// hangs: of 13 clients, 2 are with the workers and at most 8 wait, so at
// least 3 must be answered 503 while the scrape still hangs; once it ends,
// every client has its answer.
TEST(MetricsAccess, ConnectionsPastTheQueueAre503AtOnce) {
  constexpr int kClients = 13;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [&] {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(15), [&] { return release; });  // the test's guard
    return std::string("serene_up 1\n");
  });
  ASSERT_TRUE(server.ok()) << server.status().message();
  const uint16_t port = (*server)->port();

  std::atomic<int> ok{0}, shed{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, port] {
      auto client = ClientFor(port);
      auto res = client.Get("/metrics");
      if (res && res->status == 200) {
        ++ok;
      } else if (res && res->status == 503) {
        EXPECT_EQ(res->get_header_value("Retry-After"), "1");
        ++shed;
      } else {
        ++other;
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (shed.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int shed_while_hanging = shed.load();
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (std::thread& t : clients) t.join();

  EXPECT_GE(shed_while_hanging, 3) << "connections past the queue wait for the hung scrape";
  EXPECT_EQ(ok.load() + shed.load(), kClients) << other.load() << " clients got no answer";
  EXPECT_LE(ok.load(), 10);
  EXPECT_EQ(other.load(), 0);
}

}  // namespace
}  // namespace serene::switchd
