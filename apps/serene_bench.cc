// serene-bench: runs N worker processes that aggregate known vectors through
// a Serene switch, checks every result and reports throughput.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <optional>

#include "apps/bench_comm.h"
#include "apps/cli_parse.h"
#include "apps/key_flags.h"
#include "common/temp_key_file.h"
#include "dataplane/barrier_params.h"
#include "loadgen/aggregate_worker.h"
#include "loadgen/child_process.h"
#include "loadgen/process_group.h"
#include "loadgen/switch_launch.h"

int main(int argc, char** argv) {
  CLI::App app{
      "serene-bench: N worker processes aggregate known integer vectors through a Serene switch\n"
      "for a number of clocks; every pull is checked. Without --switch it\n"
      "starts its own serene-switch on a loopback port and prints its counters at the end.\n"
      "Under every policy each pull is decoded into the (rank, clock) updates it holds and\n"
      "checked against the barrier (exact under SYNC).\n"
      "`serene-bench comm` compares Serene with Gloo's allreduce side by side (see comm --help)."};
  std::string switch_addr, policy = "sync", fault, group = "on";
  serene::apps::KeyFlags key_flags;
  uint32_t workers = 4, clocks = 200, row = 256, straggle_ms = 0, window = 128, job = 1;
  uint64_t elements = 100'000;
  std::vector<uint32_t> stragglers;
  bool quiet_switch = false;
  app.add_option("--switch", switch_addr, "Switch address (host:port); default: start one");
  app.add_option("--workers,-n", workers, "Worker processes")->check(CLI::Range(1, 256));
  app.add_option("--elements,-e", elements, "Model size in int32 values")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 31));
  app.add_option("--row", row, "Values per row (per datagram)")->check(CLI::Range(1, 16368));
  app.add_option("--clocks,-c", clocks, "Clocks (iterations) per worker")->check(CLI::Range(1u, 1u << 30));
  app.add_option("--policy", policy, "sync, ssp:W, async or quorum:K:L");
  app.add_option("--job", job, "Job id")->check(CLI::Range(1, 65535));
  serene::apps::AddKeyFlags(&app, &key_flags, "", "0x5E4E");
  app.add_option("--fault", fault, "Fault injection spec for the started switch, e.g. drop=0.05,seed=1");
  app.add_option("--straggler", stragglers, "Ranks that sleep before each step");
  app.add_option("--straggle-ms", straggle_ms, "How long stragglers sleep per step (ms)");
  app.add_option("--window", window, "READs in flight per worker")->check(CLI::Range(1, 65536));
  app.add_option("--group", group,
                 "Give the started switch's job a reply group (IPv4 multicast on the loopback)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_flag("--quiet-switch", quiet_switch, "Do not print the started switch's log");
  CLI::App* comm = serene::apps::AddBenchComm(&app);
  app.require_subcommand(0, 1);
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;
  if (*comm) return serene::apps::RunBenchComm();

  auto params = serene::dataplane::BarrierParams::Parse(policy);
  if (!params.ok()) {
    fmt::print(stderr, "serene-bench: --policy: {}\n", params.status().message());
    return 2;
  }
  auto resolved = serene::apps::ResolveKeyFlags(key_flags, 0x5E4E);
  if (!resolved.ok()) {
    fmt::print(stderr, "serene-bench: {}\n", resolved.status().message());
    return 2;
  }
  if (resolved->from_argv && !switch_addr.empty()) {
    fmt::print(stderr, "serene-bench: warning: {}\n", serene::ArgvKeyWarning());
  }
  const uint32_t key = resolved->key;
  for (uint32_t s : stragglers) {
    if (s >= workers) {
      fmt::print(stderr, "serene-bench: --straggler {} is not a rank below --workers {}\n", s,
                 workers);
      return 2;
    }
  }

  std::unique_ptr<serene::loadgen::ChildProcess> sw;
  std::unique_ptr<serene::TempKeyFile> key_for_switch;  // the key stays off its command line
  if (switch_addr.empty()) {
    auto key_file_made = serene::TempKeyFile::Create(key);
    if (!key_file_made.ok()) {
      fmt::print(stderr, "serene-bench: {}\n", key_file_made.status().message());
      return 1;
    }
    key_for_switch = std::move(*key_file_made);
    auto started = serene::loadgen::StartLoopbackSwitch(
        static_cast<uint16_t>(job),
        fmt::format("id={},workers={},elements={},row={},key_file={},policy={}", job, workers,
                    elements, row, key_for_switch->path(), policy),
        group == "on",
        fault.empty() ? std::vector<std::string>{} : std::vector<std::string>{"--fault", fault});
    if (!started.ok()) {
      fmt::print(stderr, "serene-bench: {}\n", started.status().message());
      return 1;
    }
    sw = std::move(started->process);
    switch_addr = started->address;
    fmt::print("started serene-switch on {} (job {}: {} workers, {} elements, policy {})\n",
               switch_addr, job, workers, elements, policy);
  } else if (!fault.empty()) {
    fmt::print(stderr, "serene-bench: --fault applies only to a switch it starts; "
                       "give it to your serene-switch instead\n");
    return 2;
  }

  serene::loadgen::WorkerPlan plan;
  plan.clocks = clocks;
  plan.exact = params->Exact(workers);
  plan.lag = params->lag;  // kUnbounded is kNoLagBound
  fmt::print("{} workers x {} clocks of {} elements (every pull is checked: {})...\n", workers,
             clocks, elements,
             plan.exact ? "exact" : "every update the barrier requires, none it forbids");
  std::fflush(stdout);
  const double switch_cpu_before = sw ? sw->CpuSeconds() : -1;
  auto results = serene::loadgen::RunChildren(workers, [&](size_t rank) {
    serene::ClientOptions o;
    o.switch_address = switch_addr;
    o.job = static_cast<uint16_t>(job);
    o.key = key;
    o.rank = static_cast<uint32_t>(rank);
    o.world_size = workers;
    o.window = window;
    serene::loadgen::WorkerPlan p = plan;
    for (uint32_t s : stragglers) {
      if (s == rank) p.straggle = std::chrono::milliseconds(straggle_ms);
    }
    return serene::loadgen::RunAggregateWorker(o, p).ToJson();
  }, [](const std::string& line) {
    // A failed rank ends the others at once: they would wait for it.
    auto rep = serene::loadgen::WorkerReport::FromJson(line);
    return !rep.ok() || !rep->ok;
  });
  if (!results.ok()) {
    fmt::print(stderr, "serene-bench: {}\n", results.status().message());
    return 1;
  }
  const double switch_cpu = sw ? sw->CpuSeconds() - switch_cpu_before : -1;

  bool all_ok = true;
  std::string restarts;  // per rank: times the switch had lost the job
  uint64_t restarts_total = 0;
  double slowest = 0, wait_total = 0, wall_total = 0;
  uint64_t retrans = 0, nacks = 0;
  fmt::print("\n{:>4} {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>5} {:>8} {:>8} {:>6}  {}\n", "rank",
             "clocks", "checked", "time s", "pull s", "push s", "wait s", "lead", "re-READ",
             "re-CLOCK", "nacks", "result");
  for (size_t i = 0; i < results->size(); ++i) {
    const auto& child = (*results)[i];
    auto rep = serene::loadgen::WorkerReport::FromJson(child.line);
    if (!rep.ok()) {
      if (child.stopped) {
        fmt::print("{:>4}  stopped: another rank failed (its line says why)\n", i);
      } else {
        fmt::print("{:>4}  died (exit {}) without a report\n", i, child.exit_code);
      }
      all_ok = false;
      continue;
    }
    all_ok &= rep->ok;
    slowest = std::max(slowest, rep->seconds);
    wait_total += rep->clock_wait_seconds;
    wall_total += rep->seconds;
    retrans += rep->stats.read_retransmits + rep->stats.clock_retransmits;
    nacks += rep->stats.nacks;
    restarts += fmt::format(" {}", rep->stats.switch_restarts);
    restarts_total += rep->stats.switch_restarts;
    fmt::print("{:>4} {:>6} {:>8} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>5} {:>8} {:>8} {:>6}  {}\n",
               rep->rank, rep->clocks, rep->pulls_checked, rep->seconds, rep->pull_seconds,
               rep->push_seconds, rep->clock_wait_seconds, rep->max_lead,
               rep->stats.read_retransmits, rep->stats.clock_retransmits, rep->stats.nacks,
               rep->ok ? "OK" : "FAILED: " + rep->error);
  }
  const double bytes = 2.0 * 4.0 * static_cast<double>(elements) * clocks * workers;
  fmt::print("\n{}: {} clocks in {:.3f} s ({:.1f} clocks/s), {:.2f} Gbit/s through the switch "
             "(pull + push), waiting {:.0f}% of the time, {} retransmissions, {} NACKs\n",
             all_ok ? "OK" : "FAILED", clocks, slowest, clocks / slowest,
             bytes * 8 / slowest / 1e9, wall_total > 0 ? 100 * wait_total / wall_total : 0.0,
             retrans, nacks);
  if (restarts_total > 0) {
    // The switch lost the job (it restarted) and the ranks rebuilt it.
    fmt::print("switch restarts seen per rank:{}\n", restarts);
  }
  if (switch_cpu >= 0) {
    // Clocks the switch served: every rank's, including the seeding clock 0.
    const double served = static_cast<double>(workers) * (clocks + 1);
    fmt::print("switch CPU {:.3f} s: {:.1f} us per clock of one rank, {:.3f} ms per clock of all "
               "{} ranks\n",
               switch_cpu, 1e6 * switch_cpu / served, 1e3 * switch_cpu / (clocks + 1), workers);
  }
  if (sw) {
    sw->Signal(SIGTERM);
    sw->Wait();
    if (!quiet_switch) fmt::print("\n--- serene-switch log ---\n{}", sw->output());
  }
  return all_ok ? 0 : 1;
}
