#include "apps/bench_comm.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "collective/gloo_algorithm.h"
#include "common/temp_key_file.h"
#include "loadgen/child_process.h"
#include "loadgen/comm_bench.h"
#include "loadgen/process_group.h"
#include "loadgen/switch_launch.h"
#include "switch/thread_niceness.h"

namespace serene::apps {
namespace {

struct CommFlags {
  uint32_t workers = 4;
  uint64_t elements = 1'000'000;
  uint32_t row = 4096;
  uint32_t iters = 20;
  uint32_t warmup = 3;
  uint32_t window = 128;
  uint32_t switch_threads = 1;
  std::string switch_nice = "auto";
  std::string switch_sched = "batch";
  std::string algorithms = "all";
  std::string offload = "on";
  std::string group = "on";
  std::vector<std::string> switch_args;
  bool quiet_switch = true;
} flags;

// What --switch-nice auto gives the switch when the bench may: the measured
// niceness at which it keeps up with 4-8 workers pushing on 2 cores.
constexpr int kAutoSwitchNice = -15;

std::string NiceText(const std::optional<int>& nice) {
  return nice ? std::to_string(*nice) : "as started";
}
std::string NiceJson(const std::optional<int>& nice) {
  return nice ? std::to_string(*nice) : "null";
}

}  // namespace

CLI::App* AddBenchComm(CLI::App* app) {
  CLI::App* comm = app->add_subcommand(
      "comm",
      "Serene (its own switch, N worker processes: push + clock + pull per iteration, every "
      "model checked) against Gloo's allreduce of the same vector over the same N processes "
      "(each algorithm, every sum checked), interleaved; prints a table and, as its last "
      "line, JSON with the medians per iteration");
  comm->add_option("--workers,-n", flags.workers, "Worker processes")->check(CLI::Range(1, 256));
  comm->add_option("--elements,-e", flags.elements, "Vector length (int32 values)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  comm->add_option("--row", flags.row,
                   "Values per Serene row (per datagram); up to 362 fit a 1500-byte MTU")
      ->check(CLI::Range(1, 16368));
  comm->add_option("--iters,-i", flags.iters, "Measured iterations")->check(CLI::Range(1, 1 << 20));
  comm->add_option("--warmup", flags.warmup, "Iterations run before measuring")
      ->check(CLI::Range(0, 1 << 20));
  comm->add_option("--window", flags.window, "Serene READs in flight per worker")
      ->check(CLI::Range(1, 65536));
  comm->add_option("--switch-threads", flags.switch_threads, "Loop threads of the started switch")
      ->check(CLI::Range(1, 64));
  comm->add_option("--switch-nice", flags.switch_nice,
                   "Niceness of the started switch's loop threads, -20..19, or none (as "
                   "started); auto: -15 when run as root, else none. The workers run at 0: on "
                   "a host they share with the switch, it aggregates while they push, as a "
                   "switch of its own would (docs/performance.md)");
  comm->add_option("--switch-sched", flags.switch_sched,
                   "Scheduling of the started switch's loop threads: batch (SCHED_BATCH: woken "
                   "by a datagram, a loop thread does not preempt the worker sending it, and "
                   "serves more datagrams per turn) or normal (docs/performance.md)")
      ->check(CLI::IsMember({"normal", "batch"}));
  comm->add_option("--gloo", flags.algorithms,
                   "Gloo algorithms, comma-separated, or all: default (what PyTorch runs), "
                   "halving-doubling, ring, ring-chunked (all: these four; bcube is refused, "
                   "it is broken in this Gloo); none: Serene only (profiling)");
  comm->add_option("--offload", flags.offload,
                   "UDP segmentation offload (GSO/GRO) in the switch and the workers")
      ->check(CLI::IsMember({"on", "off"}));
  comm->add_option("--group", flags.group,
                   "Give the job a reply group (IPv4 multicast on the loopback): an exact row "
                   "one worker READs reaches every worker in one send")
      ->check(CLI::IsMember({"on", "off"}));
  comm->add_option("--switch-arg", flags.switch_args,
                   "Extra flag for the started serene-switch, repeatable, e.g. "
                   "--switch-arg=--recv-buffer=4MiB");
  comm->add_flag("!--switch-log", flags.quiet_switch, "Print the started switch's log at the end");
  return comm;
}

int RunBenchComm() {
  auto algorithms =
      flags.algorithms == "none"
          ? Result<std::vector<collective::GlooAlgorithm>>(std::vector<collective::GlooAlgorithm>{})
          : collective::ParseGlooAlgorithms(flags.algorithms);
  if (!algorithms.ok()) {
    fmt::print(stderr, "serene-bench comm: --gloo: {}\n", algorithms.status().message());
    return 2;
  }
  // Gloo's bcube (Debian's 0.0~git20220518) indexes a std::vector past its
  // end (caught by _GLIBCXX_ASSERTIONS at 2, 4 and 8 workers) and returns
  // wrong sums for worker counts that are not powers of two: "all" leaves it
  // out, asking for it is refused.
  {
    auto bcube =
        std::find(algorithms->begin(), algorithms->end(), collective::GlooAlgorithm::kBcube);
    if (bcube != algorithms->end()) {
      if (flags.algorithms != "all") {
        fmt::print(stderr,
                   "serene-bench comm: --gloo bcube: Gloo's bcube reads past the end of its "
                   "buffers and returns wrong sums for worker counts that are not a power of "
                   "two; leave it out\n");
        return 2;
      }
      algorithms->erase(bcube);
    }
  }
  // The switch's niceness: nullopt = as started.
  std::optional<int> switch_nice;
  if (flags.switch_nice == "auto") {
    if (geteuid() == 0) switch_nice = kAutoSwitchNice;
  } else if (flags.switch_nice != "none") {
    switch_nice = switchd::ParseNiceness(flags.switch_nice);
    if (!switch_nice) {
      fmt::print(stderr,
                 "serene-bench comm: --switch-nice '{}': expected a niceness -20..19, none or "
                 "auto\n",
                 flags.switch_nice);
      return 2;
    }
  }
  char dir_template[] = "/tmp/serene-comm-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    fmt::print(stderr, "serene-bench comm: cannot create a rendezvous directory in /tmp\n");
    return 1;
  }
  const std::string rendezvous = dir_template;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{rendezvous};

  // A fresh key, handed to the switch in a private file (not its command line).
  auto key_file = TempKeyFile::CreateWithFreshKey();
  if (!key_file.ok()) {
    fmt::print(stderr, "serene-bench comm: {}\n", key_file.status().message());
    return 1;
  }
  // The Gloo phases keep the switch silent for seconds on large vectors: no
  // eviction in between.
  std::vector<std::string> switch_args = {"--threads", std::to_string(flags.switch_threads),
                                          "--offload", flags.offload};
  if (switch_nice) {
    switch_args.push_back("--nice");
    switch_args.push_back(std::to_string(*switch_nice));
  }
  switch_args.push_back("--sched");
  switch_args.push_back(flags.switch_sched);
  switch_args.insert(switch_args.end(), flags.switch_args.begin(), flags.switch_args.end());
  // The barrier around every timed phase, shared by the forked workers.
  auto phases = loadgen::ShmBarrier::Create(flags.workers);
  if (!phases.ok()) {
    fmt::print(stderr, "serene-bench comm: {}\n", phases.status().message());
    return 1;
  }
  auto started = loadgen::StartLoopbackSwitch(
      1,
      fmt::format("id=1,workers={},elements={},row={},key_file={},policy=sync,evict_after=3600s",
                  flags.workers, flags.elements, flags.row, (*key_file)->path()),
      flags.group == "on", switch_args);
  if (!started.ok()) {
    fmt::print(stderr, "serene-bench comm: {}\n", started.status().message());
    return 1;
  }
  loadgen::ChildProcess& sw = *started->process;
  const std::string listening = started->address;

  loadgen::CommPlan plan;
  plan.client.switch_address = listening;
  plan.client.job = 1;
  plan.client.key = (*key_file)->key();
  plan.client.window = flags.window;
  plan.client.offload = flags.offload == "on";
  plan.client.group = flags.group == "on";
  plan.workers = flags.workers;
  plan.warmup = flags.warmup;
  plan.iters = flags.iters;
  plan.algorithms = *algorithms;
  plan.rendezvous_dir = rendezvous;
  fmt::print(
      "serene-bench comm: {} workers, {} int32 elements, Serene rows of {} ({} rows), "
      "{} + {} iterations, switch {} ({} thread{}, niceness {}, sched {}), offload {}\n",
      flags.workers, flags.elements, flags.row, (flags.elements + flags.row - 1) / flags.row,
      flags.warmup, flags.iters, listening, flags.switch_threads,
      flags.switch_threads == 1 ? "" : "s", NiceText(switch_nice), flags.switch_sched,
      flags.offload);
  std::fflush(stdout);

  const double cpu_before = sw.CpuSeconds();
  auto results = loadgen::RunChildren(
      flags.workers,
      [&](size_t rank) {
        return loadgen::RunCommRank(plan, static_cast<uint32_t>(rank), phases->get()).ToJson();
      },
      [](const std::string& line) {
        auto rep = loadgen::CommRankReport::FromJson(line);
        return !rep.ok() || !rep->ok;
      });
  const double switch_cpu = sw.CpuSeconds() - cpu_before;
  sw.Signal(SIGTERM);
  sw.Wait();
  if (!results.ok()) {
    fmt::print(stderr, "serene-bench comm: {}\n", results.status().message());
    return 1;
  }
  std::vector<loadgen::CommRankReport> reports;
  bool all_ok = true;
  uint64_t reads = 0, re_reads = 0, re_clocks = 0, nacks = 0, group_rows = 0;
  const uint64_t plan_rows = (flags.elements + flags.row - 1) / flags.row;
  uint32_t checks = 0;
  for (size_t i = 0; i < results->size(); ++i) {
    auto rep = loadgen::CommRankReport::FromJson((*results)[i].line);
    if (!rep.ok()) {
      fmt::print("rank {}: {}\n", i,
                 (*results)[i].stopped ? "stopped: another rank failed"
                                       : fmt::format("died (exit {})", (*results)[i].exit_code));
      all_ok = false;
      continue;
    }
    if (!rep->ok) {
      fmt::print("rank {}: FAILED: {}\n", i, rep->error);
      all_ok = false;
    }
    reads += rep->stats.reads;
    re_reads += rep->stats.read_retransmits;
    group_rows += rep->stats.group_rows;
    re_clocks += rep->stats.clock_retransmits;
    nacks += rep->stats.nacks;
    checks += rep->checks;
    reports.push_back(std::move(*rep));
  }
  if (!flags.quiet_switch || !all_ok) fmt::print("--- serene-switch log ---\n{}", sw.output());
  if (!all_ok) return 1;

  auto series = loadgen::SummarizeComm(plan, reports);
  size_t best = 1;
  for (size_t i = 2; i < series.size(); ++i) {
    if (series[i].median_ms < series[best].median_ms) best = i;
  }
  const uint32_t clocks = flags.warmup + flags.iters;
  // CPU of an iteration, all processes: the ranks' in the timed phase and,
  // for Serene, the switch's (its whole run over the iterations: it idles
  // through the Gloo phases).
  const double switch_cpu_ms = 1e3 * switch_cpu / clocks;
  auto cpu_of = [&](size_t i) { return series[i].cpu_ms + (i == 0 ? switch_cpu_ms : 0.0); };
  fmt::print("\n{:<24} {:>10} {:>10} {:>10} {:>8} {:>10}\n", "per iteration", "median ms", "p10 ms",
             "p90 ms", "/ serene", "CPU ms");
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    fmt::print("{:<24} {:>10.3f} {:>10.3f} {:>10.3f} {:>8.2f} {:>10.3f}\n", s.name, s.median_ms,
               s.p10_ms, s.p90_ms, s.median_ms / series[0].median_ms, cpu_of(i));
  }
  fmt::print(
      "(CPU ms: all processes' CPU time in one iteration, median; Serene's is the ranks' "
      "{:.3f} + the switch's {:.3f})\n",
      series[0].cpu_ms, switch_cpu_ms);
  // A re-sent CLOCK is mostly a rank waiting at the barrier for a slower one
  // (it re-sends so that a lost RELEASE is recovered), not a loss.
  fmt::print(
      "\n{} results checked, all exact; Serene: {:.1f} READs per iteration (all ranks), {} "
      "READs re-sent, {} NACKs, {} CLOCKs re-sent while waiting at the barrier, {:.1f} % of "
      "rows through the reply group; switch CPU {:.3f} ms per iteration (over the whole run, "
      "Gloo phases idle)\n",
      checks, static_cast<double>(reads) / clocks, re_reads, nacks, re_clocks,
      100.0 * static_cast<double>(group_rows) /
          (static_cast<double>(clocks) * flags.workers * plan_rows),
      switch_cpu_ms);
  if (series.size() < 2) {
    fmt::print(
        "{{\"workers\":{},\"elements\":{},\"row\":{},\"switch_nice\":{},\"switch_sched\":\"{}\","
        "\"serene_ms\":{:.4f},"
        "\"switch_cpu_ms\":{:.4f},\"serene_cpu_ms\":{:.4f},\"serene_ranks_cpu_ms\":{:.4f}}}\n",
        flags.workers, flags.elements, flags.row, NiceJson(switch_nice), flags.switch_sched,
        series[0].median_ms,
        switch_cpu_ms, cpu_of(0), series[0].cpu_ms);
    return 0;
  }
  std::string each;  // every algorithm's median
  for (size_t i = 1; i < series.size(); ++i) {
    each += fmt::format("{}\"{}\":{:.4f}", i == 1 ? "" : ",", series[i].name.substr(5),
                        series[i].median_ms);
  }
  fmt::print(
      "{{\"workers\":{},\"elements\":{},\"row\":{},\"switch_nice\":{},\"switch_sched\":\"{}\","
      "\"serene_ms\":{:.4f},\"gloo_ms\":{:.4f},"
      "\"serene_over_gloo\":{:.4f},\"gloo_algorithm\":\"{}\",\"read_retransmits\":{},\"nacks\":{},"
      "\"clock_retransmits\":{},"
      "\"switch_cpu_ms\":{:.4f},\"serene_cpu_ms\":{:.4f},\"serene_ranks_cpu_ms\":{:.4f},"
      "\"gloo_cpu_ms\":{:.4f},\"gloo_each_ms\":{{{}}}}}\n",
      flags.workers, flags.elements, flags.row, NiceJson(switch_nice), flags.switch_sched,
      series[0].median_ms, series[best].median_ms,
      series[0].median_ms / series[best].median_ms, series[best].name.substr(5), re_reads, nacks,
      re_clocks, switch_cpu_ms, cpu_of(0), series[0].cpu_ms, cpu_of(best), each);
  return 0;
}

}  // namespace serene::apps
