#include "bmv2/bmv2_daemon.h"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "bmv2/bmv2_target.h"
#include "bmv2/simple_switch_process.h"
#include "control/runtime_server.h"
#include "net/address.h"

#ifndef SERENE_P4_SOURCE
#define SERENE_P4_SOURCE "p4/serene.p4"
#endif

namespace serene::bmv2 {
namespace {

// --address: "a.b.c.d" (port 7000) or "a.b.c.d:port", IPv4 only (the program
// matches a 32-bit destination address).
Result<proto::Endpoint> ParseAddress(const std::string& text) {
  const bool has_port = text.find(':') != std::string::npos;
  auto ep = has_port ? net::ParseEndpoint(text) : net::ParseHost(text, 7000);
  if (!ep.ok()) return Status::InvalidArgument("--address: " + std::string(ep.status().message()));
  if (ep->family != proto::Endpoint::Family::kIPv4 || net::IsWildcard(*ep)) {
    return Status::InvalidArgument("--address " + text +
                                   ": the P4 target needs one numeric IPv4 address, e.g. "
                                   "10.0.0.1:7000");
  }
  if (ep->port == 0)
    return Status::InvalidArgument("--address " + text + ": port must be 1..65535");
  return ep;
}

}  // namespace

void AddBmv2Flags(CLI::App* app, Bmv2Flags* flags) {
  app->add_option("--target", flags->target,
                  "Data plane: software (this process) or bmv2 (p4/serene.p4 in BMv2's "
                  "simple_switch; root, docs/p4.md) (default software)")
      ->check(CLI::IsMember({"software", "bmv2"}))
      ->type_name("software|bmv2");
  app->add_option("--interface", flags->interface,
                  "bmv2: the interface workers reach the switch through (simple_switch port 0)")
      ->type_name("IFACE");
  app->add_option("--address", flags->address,
                  "bmv2: the IPv4 address (and UDP port, default 7000) the switch answers")
      ->type_name("IP[:PORT]");
  app->add_option("--p4-prefix", flags->prefix,
                  "bmv2: where the P4 toolchain is installed (default /opt/p4)")
      ->type_name("DIR");
  app->add_option("--p4-source", flags->p4_source,
                  "bmv2: the P4 program to compile (default: this build's p4/serene.p4)")
      ->type_name("FILE");
  app->add_option("--p4-json", flags->p4_json,
                  "bmv2: an already compiled program (p4c-bm2-ss output) instead of compiling")
      ->type_name("FILE");
  app->add_option("--thrift-port", flags->thrift_port,
                  "bmv2: simple_switch's Thrift port (default 9090)")
      ->check(CLI::Range(1, 65535))
      ->type_name("PORT");
}

Status CheckTargetFlags(const Bmv2Flags& flags, const switchd::SwitchFlags& sw) {
  if (flags.target != "bmv2") {
    if (!flags.interface.empty() || !flags.address.empty()) {
      return Status::InvalidArgument(
          "--interface and --address are for --target bmv2; the software switch listens on "
          "--bind and --port");
    }
    return Status::Ok();
  }
  if (flags.interface.empty() || flags.address.empty()) {
    return Status::InvalidArgument(
        "--target bmv2 needs --interface IFACE (where the workers are) and --address IP[:PORT]");
  }
  const std::pair<bool, const char*> software_only[] = {
      {!sw.bind.empty(), "--bind"},          {sw.port.has_value(), "--port"},
      {sw.threads.has_value(), "--threads"}, {sw.batch.has_value(), "--batch"},
      {sw.fault.has_value(), "--fault"},     {sw.metrics.has_value(), "--metrics"},
      {sw.offload.has_value(), "--offload"}};
  for (const auto& [given, name] : software_only) {
    if (given) {
      return Status::InvalidArgument(std::string(name) +
                                     " is a flag of the software switch; --target bmv2 takes "
                                     "--interface and --address");
    }
  }
  if (if_nametoindex(flags.interface.c_str()) == 0) {
    return Status::InvalidArgument("--interface " + flags.interface + ": no such interface");
  }
  return ParseAddress(flags.address).status();
}

int RunBmv2Daemon(const Bmv2Flags& flags, const switchd::SwitchConfig& config,
                  const std::string& token, const sigset_t& stop_signals) {
  SimpleSwitchOptions o;
  o.prefix = flags.prefix;
  o.p4_source = flags.p4_source.empty() ? SERENE_P4_SOURCE : flags.p4_source;
  o.json = flags.p4_json;
  o.interface = flags.interface;
  o.thrift_port = flags.thrift_port;
  auto address = ParseAddress(flags.address);
  if (!address.ok()) {
    spdlog::critical("{}", address.status().message());
    return 2;
  }
  o.ip = net::Ipv4Of(*address);
  o.port = address->port;
  char dir[] = "/tmp/serene-bmv2.XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    spdlog::critical("cannot create a work directory in /tmp");
    return 1;
  }
  o.work_dir = dir;
  spdlog::info("bmv2: {} simple_switch on {} (work directory {})",
               o.json.empty() ? "compiling " + o.p4_source + ", then starting" : "starting",
               o.interface, o.work_dir);
  auto sw = SimpleSwitchProcess::Start(o);
  if (!sw.ok()) {
    spdlog::critical("bmv2: {}", sw.status().message());
    return 1;
  }
  auto cli = (*sw)->Connect();
  if (!cli.ok()) {
    spdlog::critical("bmv2: {}", cli.status().message());
    return 1;
  }
  auto kicks = KickChannel::Open((*sw)->control_interface(), o.ip, o.port);
  if (!kicks.ok()) {
    spdlog::critical("bmv2: {}", kicks.status().message());
    return 1;
  }
  Bmv2Target target(std::move(*cli), std::move(*kicks), ProgramLimits{}, (*sw)->started());
  for (const auto& job : config.jobs) {
    Status s = target.CreateJob(job);
    if (!s.ok()) {
      spdlog::critical("cannot create job {}: {}", job.id, s.message());
      return 1;
    }
    spdlog::info("job {}", job.ToString());
  }
  if (config.jobs.empty()) spdlog::warn("no jobs: every packet will be dropped as unknown_job");

  std::unique_ptr<control::RuntimeServer> runtime;
  if (config.control != "off") {
    auto r = control::RuntimeServer::Start(&target,
                                           control::RuntimeServerOptions{config.control, token});
    if (!r.ok()) {
      spdlog::critical("{}", r.status().message());
      return 1;
    }
    runtime = std::move(*r);
    spdlog::info("runtime API at {}{}", runtime->address(),
                 token.empty() ? "" : " (token required)");
  }

  // Silence eviction (SilenceEvictor's job in the software switch).
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::atomic<uint64_t> evictions{0};
  std::thread evictor([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping; })) {
      lock.unlock();
      evictions += target.EvictSilent();
      lock.lock();
    }
  });

  spdlog::info("listening on {} (bmv2 simple_switch on {}, Thrift port {})",
               net::FormatEndpoint(*address), o.interface, o.thrift_port);
  spdlog::info("ARP requests for {} are answered with {}", net::FormatHost(*address), kSwitchMac);

  int sig = 0;
  while (sigwait(&stop_signals, &sig) != 0) {
  }
  spdlog::info("{}: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  evictor.join();
  if (runtime) runtime->Stop();
  std::string report = "counters (bmv2):\n";
  if (auto g = target.GlobalCounters(); g.ok()) {
    for (const auto& [name, n] : *g) report += "  " + name + " " + std::to_string(n) + "\n";
  }
  for (uint16_t id : target.JobIds()) {
    auto t = target.Telemetry(id);
    if (!t.ok()) continue;
    report += "  job " + std::to_string(id) + ": low " + std::to_string(t->low) + ", high " +
              std::to_string(t->high) + ", releases " + std::to_string(t->counters.releases) +
              ", nacks " + std::to_string(t->counters.nacks) + ", folds " +
              std::to_string(t->counters.folds) + "\n";
    for (size_t r = 1; r < t->counters.drops.size(); ++r) {
      if (t->counters.drops[r] == 0) continue;
      report += "    drop " +
                std::string(dataplane::DropReasonName(static_cast<dataplane::DropReason>(r))) +
                " " + std::to_string(t->counters.drops[r]) + "\n";
    }
  }
  report += "  silence evictions " + std::to_string(evictions.load()) + "\n";
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  (*sw)->Stop();
  std::error_code ec;
  std::filesystem::remove_all(o.work_dir, ec);
  return 0;
}

}  // namespace serene::bmv2
