// serene-switch: the Serene switch daemon. Parses flags, builds the pipeline
// with its static jobs, runs the UDP ports until SIGINT/SIGTERM, then prints
// the counters. Everything else lives in switch/ (see docs/switch.md).
#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <string>

#include "apps/cli_parse.h"
#include "dataplane/pipeline.h"
#include "net/address.h"
#include "switch/counters_report.h"
#include "switch/switch_config.h"
#include "switch/switch_flags.h"
#include "switch/switch_server.h"

int main(int argc, char** argv) {
  CLI::App app{
      "serene-switch: the Serene in-network aggregation switch (data plane on UDP).\n"
      "Flags override the --config file; jobs from both are combined. See docs/switch.md."};
  serene::switchd::SwitchFlags flags;
  serene::switchd::AddSwitchFlags(&app, &flags);
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

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

  serene::dataplane::Pipeline pipeline;
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
  const auto endpoints = server.local_endpoints();
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (i > 0 && endpoints[i] == endpoints[i - 1]) continue;  // threads sharing an address
    spdlog::info("listening on {} ({} thread(s), batch {})",
                 serene::net::FormatEndpoint(endpoints[i]), config->server.threads,
                 config->server.batch);
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("{}: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server.Stop();
  std::fputs(serene::switchd::FormatCountersReport(pipeline, server.counters()).c_str(), stdout);
  std::fflush(stdout);
  return 0;
}
