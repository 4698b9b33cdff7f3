// serene-switch: the Serene switch daemon. Parses flags, builds the pipeline
// with its static jobs, runs the UDP ports, the silence evictor and the
// runtime API until SIGINT/SIGTERM, then prints the counters. With --target
// bmv2 the data plane is p4/serene.p4 in BMv2 instead (bmv2/bmv2_daemon.h).
// Everything else lives in switch/, control/ and bmv2/ (docs/switch.md,
// docs/control.md, docs/p4.md).
#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <random>
#include <string>

#include "apps/cli_parse.h"
#include "bmv2/bmv2_daemon.h"
#include "common/secret_file.h"
#include "common/sigpipe.h"
#include "common/secure_random.h"
#include "control/runtime_client.h"
#include "control/runtime_server.h"
#include "dataplane/pipeline.h"
#include "net/address.h"
#include "switch/counters_report.h"
#include "switch/metrics_exposition.h"
#include "switch/metrics_http.h"
#include "switch/silence_evictor.h"
#include "switch/switch_config.h"
#include "switch/switch_flags.h"
#include "switch/switch_server.h"
#include "switch/system_memory.h"

int main(int argc, char** argv) {
  serene::IgnoreSigpipe();  // a closed log or counters pipe must not end the switch
  CLI::App app{
      "serene-switch: the Serene in-network aggregation switch (data plane on UDP).\n"
      "Flags override the --config file; jobs from both are combined. See docs/switch.md."};
  serene::switchd::SwitchFlags flags;
  serene::switchd::AddSwitchFlags(&app, &flags);
  serene::bmv2::Bmv2Flags target_flags;
  serene::bmv2::AddBmv2Flags(&app, &target_flags);
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;
  if (serene::Status s = serene::bmv2::CheckTargetFlags(target_flags, flags); !s.ok()) {
    std::fprintf(stderr, "serene-switch: %s\n", s.message().c_str());
    return 2;
  }

  auto config = serene::switchd::BuildConfig(flags);
  if (!config.ok()) {
    std::fprintf(stderr, "serene-switch: %s\n", config.status().message().c_str());
    return 2;
  }
  // Block the stop signals from here on, in every thread (the port threads
  // inherit the mask); main waits for them once the switch runs. A signal
  // during start-up (a large job takes a while to allocate) is held, not fatal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto logger = spdlog::stderr_color_mt("serene-switch");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  for (const std::string& w : config->Warnings()) spdlog::warn("{}", w);

  // The tokens are read before any socket opens; "" = none.
  std::string token, metrics_token;
  const std::pair<const std::string*, std::string*> token_files[] = {
      {&config->token_file, &token}, {&config->metrics_token_file, &metrics_token}};
  for (const auto& [path, out] : token_files) {
    if (path->empty()) continue;
    auto t = serene::ReadTokenFile(*path);
    if (!t.ok()) {
      spdlog::critical("{}: {}",
                       path == &config->token_file ? "--token-file" : "--metrics-token-file",
                       t.status().message());
      return 2;
    }
    *out = *t;
  }
  if (config->control != "off") {
    serene::Status s = serene::control::CheckControlAddress(config->control, !token.empty());
    if (!s.ok()) {
      spdlog::critical("--control: {}", s.message());
      return 2;
    }
  }

  if (target_flags.target == "bmv2") {
    return serene::bmv2::RunBmv2Daemon(target_flags, *config, token, stop_signals);
  }

  // Each job's incarnation (JOIN_ACK) must differ from a previous switch's,
  // so ranks can tell a restarted switch from a delayed reply. The JOIN
  // cookies' secret (docs/protocol.md, "Return routability") is drawn anew:
  // a restarted switch takes none of its predecessor's cookies.
  std::random_device entropy;
  serene::Result<uint64_t> k0 = serene::DrawSecret64(), k1 = serene::DrawSecret64();
  if (!k0.ok() || !k1.ok()) {
    spdlog::critical("{}", (!k0.ok() ? k0 : k1).status().message());
    return 1;
  }
  // Jobs (static and through the runtime API) are admitted against the
  // host's available memory and the switch's cgroup limit (docs/control.md).
  serene::switchd::SystemMemory memory;
  if (auto budget = memory.Read()) spdlog::info("memory for jobs: {}", budget->source);
  serene::dataplane::Pipeline pipeline((uint64_t{entropy()} << 32) | entropy(),
                                       serene::dataplane::CookieSecret{*k0, *k1}, &memory);
  for (const auto& job : config->jobs) {
    serene::Status s = pipeline.CreateJob(job);
    if (!s.ok()) {
      spdlog::critical("cannot create job {}: {}", job.id, s.message());
      return 1;
    }
    spdlog::info("job {}", job.ToString());
  }
  if (config->jobs.empty()) spdlog::warn("no jobs: every packet will be dropped as unknown_job");

  serene::switchd::SwitchServer server(&pipeline, config->server);
  serene::Status started = server.Start();
  if (!started.ok()) {
    spdlog::critical("cannot start: {}", started.message());
    return 1;
  }
  if (config->server.fault.enabled()) {
    spdlog::warn("fault injection on: {}", config->server.fault.ToString());
  }
  auto send = [&server](const serene::dataplane::Output& out) { return server.Send(out); };
  serene::switchd::SilenceEvictor evictor(&pipeline, send, serene::switchd::NowNanos);
  evictor.Start();

  std::unique_ptr<serene::control::RuntimeServer> runtime;
  if (config->control != "off") {
    auto r = serene::control::RuntimeServer::Start(
        &pipeline, send, serene::switchd::NowNanos,
        serene::control::RuntimeServerOptions{config->control, token});
    if (r.ok()) {
      runtime = std::move(*r);
      spdlog::info("runtime API at {}{}", runtime->address(),
                   token.empty() ? "" : " (token required)");
    } else if (config->control_given) {
      spdlog::critical("{}", r.status().message());
      return 1;
    } else {
      spdlog::warn(
          "runtime API not served: {} (another serene-switch on this host? pass "
          "--control HOST:PORT, port 0 = any free one, or --control off)",
          r.status().message());
    }
  }

  std::unique_ptr<serene::switchd::MetricsHttpServer> metrics;
  if (!config->metrics.empty()) {
    const size_t colon = config->metrics.rfind(':');
    std::string host = config->metrics.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    const auto port = static_cast<uint16_t>(std::stoul(config->metrics.substr(colon + 1)));
    auto render = [&pipeline, &server, &runtime, &evictor] {
      serene::switchd::ControlPlaneCounters c;
      if (runtime) {
        const serene::control::RuntimeApiCounters api = runtime->counters();
        c.rpcs = api.calls;
        c.unauthenticated = api.unauthenticated;
        c.invalid_argument = api.invalid_argument;
      }
      c.silence_evictions = evictor.evictions();
      return serene::switchd::RenderMetrics(pipeline, server.counters(), c,
                                            serene::switchd::NowNanos());
    };
    serene::switchd::MetricsHttpOptions options;
    options.token = metrics_token;
    auto m = serene::switchd::MetricsHttpServer::Start(host, port, render, options);
    if (!m.ok()) {
      spdlog::critical("--metrics: {}", m.status().message());
      return 1;
    }
    metrics = std::move(*m);
    spdlog::info("metrics at http://{}:{}/metrics", config->metrics.substr(0, colon),
                 metrics->port());
  }

  const auto endpoints = server.local_endpoints();
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (i > 0 && endpoints[i] == endpoints[i - 1]) continue;  // threads sharing an address
    spdlog::info("listening on {} ({} thread(s), batch {}{}{})",
                 serene::net::FormatEndpoint(endpoints[i]), config->server.threads,
                 config->server.batch,
                 config->server.nice ? ", nice " + std::to_string(*config->server.nice) : "",
                 config->server.sched_batch ? ", sched batch" : "");
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("{}: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  if (metrics) metrics->Stop();
  if (runtime) runtime->Stop();
  evictor.Stop();
  server.Stop();
  std::fputs(serene::switchd::FormatCountersReport(pipeline, server.counters()).c_str(), stdout);
  std::fflush(stdout);
  return 0;
}
