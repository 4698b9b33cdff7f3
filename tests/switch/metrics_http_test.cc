// The metrics HTTP endpoint on loopback, scraped with httplib::Client.
#include "switch/metrics_http.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "dataplane/job_config.h"
#include "dataplane/pipeline.h"
#include "switch/metrics_exposition.h"

namespace serene::switchd {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

std::unique_ptr<MetricsHttpServer> StartOrDie(std::function<std::string()> render) {
  auto s = MetricsHttpServer::Start("127.0.0.1", 0, std::move(render));
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  EXPECT_NE((*s)->port(), 0);
  return std::move(*s);
}

httplib::Client ClientFor(const MetricsHttpServer& server) {
  httplib::Client c("127.0.0.1", server.port());
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(5, 0);
  return c;
}

TEST(MetricsHttpServer, ServesMetrics) {
  std::atomic<int> calls{0};
  auto server = StartOrDie([&] {
    ++calls;
    return std::string("# HELP serene_up Test.\n# TYPE serene_up gauge\nserene_up 1\n");
  });
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kContentType);
  EXPECT_EQ(res->body, "# HELP serene_up Test.\n# TYPE serene_up gauge\nserene_up 1\n");
  EXPECT_EQ(calls.load(), 1);

  // Scraped again (on the kept-alive connection): rendered again.
  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(calls.load(), 2);
}

TEST(MetricsHttpServer, RootPointsToMetricsAndOtherPathsAre404) {
  auto server = StartOrDie([] { return std::string("x 1\n"); });
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  auto root = client.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  EXPECT_NE(root->body.find("/metrics"), std::string::npos);
  EXPECT_EQ(root->body.find('\n'), root->body.size() - 1) << "one line";

  for (const char* path : {"/nope", "/metrics/extra", "/metricsx", "/favicon.ico"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
}

TEST(MetricsHttpServer, RenderFailureIs500AndTheServerGoesOn) {
  std::atomic<bool> fail{true};
  auto server = StartOrDie([&]() -> std::string {
    if (fail) throw std::runtime_error("telemetry unavailable");
    return "x 1\n";
  });
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_NE(res->body.find("telemetry unavailable"), std::string::npos);
  fail = false;
  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "x 1\n");
}

TEST(MetricsHttpServer, StopIsIdempotentAndClosesThePort) {
  auto server = StartOrDie([] { return std::string("x 1\n"); });
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  ASSERT_TRUE(client.Get("/metrics"));
  server->Stop();
  server->Stop();
  httplib::Client after("127.0.0.1", server->port());
  after.set_connection_timeout(1, 0);
  EXPECT_FALSE(after.Get("/metrics")) << "still serving after Stop()";
  server.reset();  // the destructor stops once more
}

TEST(MetricsHttpServer, StopRightAfterStartReturns) {
  for (int i = 0; i < 20; ++i) {
    auto server = StartOrDie([] { return std::string(); });
    ASSERT_NE(server, nullptr);
    server->Stop();
  }
  for (int i = 0; i < 20; ++i) {
    auto server = StartOrDie([] { return std::string(); });  // destructor only
  }
}

TEST(MetricsHttpServer, BusyPortFailsWithAddressAndReason) {
  auto first = StartOrDie([] { return std::string("x 1\n"); });
  ASSERT_NE(first, nullptr);
  const uint16_t port = first->port();
  auto second = MetricsHttpServer::Start("127.0.0.1", port, [] { return std::string(); });
  ASSERT_FALSE(second.ok()) << "a second server bound a busy port";
  const std::string& msg = second.status().message();
  EXPECT_NE(msg.find("cannot serve metrics on 127.0.0.1:" + std::to_string(port) + ": "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Address already in use"), std::string::npos) << msg;
  // The first one is untouched.
  auto client = ClientFor(*first);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "x 1\n");
}

TEST(MetricsHttpServer, ServesThePipelinesExposition) {
  dataplane::Pipeline pipeline;
  auto c = dataplane::JobConfig::ParseSpec("id=3,workers=2,elements=10,key=7");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(pipeline.CreateJob(*c).ok());
  auto server = StartOrDie([&] {
    return RenderMetrics(pipeline, ServerCounters{}, ControlPlaneCounters{}, NowNanos());
  });
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kContentType);
  EXPECT_NE(res->body.find("\nserene_jobs 1\n"), std::string::npos);
  EXPECT_NE(res->body.find("\nserene_job_workers{job_id=\"3\"} 2\n"), std::string::npos);
  EXPECT_NE(res->body.find("\nserene_rank_done_clock{job_id=\"3\",rank=\"1\"} -1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace serene::switchd
