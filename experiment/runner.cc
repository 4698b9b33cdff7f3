#include "experiment/runner.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "experiment/commands.h"
#include "experiment/metrics_reader.h"
#include "loadgen/child_process.h"
#include "loadgen/switch_launch.h"

namespace serene::experiment {
namespace {

using Clock = std::chrono::steady_clock;
using loadgen::ChildProcess;

constexpr int kLogTailLines = 12;
constexpr auto kSwitchStartTimeout = std::chrono::seconds(10);
constexpr auto kSwitchStopTimeout = std::chrono::seconds(10);
constexpr uint16_t kJob = 1;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The last `n` lines of `text`, indented, without a final newline.
std::string Tail(const std::string& text, int n) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t start = end;
  for (int lines = 0; start > 0 && lines < n; --start) {
    if (text[start - 1] == '\n' && ++lines == n) break;
  }
  std::string out;
  size_t pos = start;
  while (pos < end) {
    const size_t nl = std::min(text.find('\n', pos), end);
    out += "    " + text.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  if (out.empty()) return "    (no output)";
  out.pop_back();
  return out;
}

// "step 450 t=8.1s loss=0.4104 acc=0.8290" from serene-train's last progress
// line, or "" before the first one.
std::string LastStep(const std::string& log) {
  const size_t at = log.rfind("] step ");
  if (at == std::string::npos) return "";
  const size_t end = std::min(log.find('\n', at), log.size());
  std::string line = log.substr(at + 2, end - at - 2);
  if (const size_t cut = line.find(" compute="); cut != std::string::npos) line.resize(cut);
  return line;
}

// What the launcher knows about one rank process.
struct RankExit {
  bool exited = false;
  std::optional<int> code;  // nullopt: killed at the deadline
  Clock::time_point when;
};

std::string ExitText(const RankExit& e) {
  if (!e.code) return "was killed at the run's timeout";
  if (*e.code > 128) return fmt::format("was ended by signal {}", *e.code - 128);
  return fmt::format("exited with code {}", *e.code);
}

}  // namespace

std::string DefaultBinDir() { return loadgen::OwnBinaryDir(); }

std::string RunDirName(size_t index, const RunSpec& run) {
  return fmt::format("{}-{}", index + 1, Slug(run.label));
}

RunSummary ExecuteRun(const Scenario& scenario, size_t index, const RunnerOptions& options) {
  const RunSpec& run = scenario.runs[index];
  const std::string dir = options.out_dir + "/" + RunDirName(index, run);
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  auto fail = [&](Status why) {
    RunSummary r = FailedRun(run, std::move(why));
    r.dir = dir;
    return r;
  };

  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Status::IoError("cannot create run directory " + dir + ": " + ec.message()));
  const std::string bin_dir = options.bin_dir.empty() ? DefaultBinDir() : options.bin_dir;
  const std::string train_bin = bin_dir + "/serene-train";
  const std::string switch_bin = bin_dir + "/serene-switch";
  const bool serene = run.backend == BackendKind::kSerene;
  for (const std::string& bin : {train_bin, serene ? switch_bin : train_bin}) {
    if (access(bin.c_str(), X_OK) != 0) {
      return fail(Status::NotFound(bin + " not found or not executable; build it (cmake --build " +
                                   "build) or point --bin-dir at the directory that holds it"));
    }
  }

  // 1. The switch.
  RunContext ctx;
  ctx.dir = dir;
  ctx.job = kJob;
  std::unique_ptr<ChildProcess> sw;
  if (serene) {
    ctx.key = RunKey(index);
    sw = std::make_unique<ChildProcess>(switch_bin, SwitchArgs(scenario, run, kJob, ctx.key));
    auto listening = loadgen::WaitForListening(*sw, kSwitchStartTimeout);
    if (!listening) {
      (void)WriteTextFile(dir + "/switch.log", sw->output());
      return fail(Status::Unavailable("serene-switch did not start; its output:\n" +
                                      Tail(sw->output(), kLogTailLines)));
    }
    ctx.switch_address = *listening;
    progress(fmt::format("  serene-switch on {}: job {}", ctx.switch_address,
                         SwitchJobSpec(scenario, run, kJob, ctx.key)));
  }

  // 2. The ranks.
  const int n = scenario.workers;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(std::make_unique<ChildProcess>(train_bin, TrainArgs(scenario, run, r, ctx)));
    if (!ranks.back()->started()) {
      return fail(Status::Internal(fmt::format("cannot start {} for rank {}", train_bin, r)));
    }
  }
  const Clock::time_point t0 = Clock::now();
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(scenario.timeout_s));
  const Clock::time_point deadline = t0 + timeout;
  progress(fmt::format("  {} serene-train ranks started ({}); logs and metrics in {}", n,
                       BackendName(run.backend), dir));

  // 3. Wait: one waiter per rank (ChildProcess::Wait blocks and kills at the
  // deadline); this thread reports progress and reacts to the first failure.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RankExit> exits(n);
  std::vector<std::thread> waiters;
  for (int r = 0; r < n; ++r) {
    waiters.emplace_back([&, r] {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(deadline - Clock::now(), Clock::duration::zero()));
      const std::optional<int> code = ranks[r]->Wait(left);
      std::lock_guard lock(mu);
      exits[r] = {true, code, Clock::now()};
      cv.notify_all();
    });
  }
  bool stopping = false;
  {
    std::unique_lock lock(mu);
    const auto every = std::max<Clock::duration>(options.progress_every, std::chrono::seconds(1));
    Clock::time_point next_report = t0 + every;
    auto running = [&] {
      return static_cast<int>(
          std::count_if(exits.begin(), exits.end(), [](const RankExit& e) { return !e.exited; }));
    };
    while (running() > 0) {
      cv.wait_until(lock, next_report);
      for (int r = 0; r < n && !stopping; ++r) {
        if (exits[r].exited && exits[r].code.value_or(0) != 0) {
          // Its peers would wait for it (at the switch's barrier or in a Gloo
          // collective) until their deadlines: end them and the switch now.
          progress(fmt::format("  rank {} {}: stopping the other ranks{}", r, ExitText(exits[r]),
                               sw ? " and the switch" : ""));
          for (int o = 0; o < n; ++o) {
            if (!exits[o].exited) ranks[o]->Signal(SIGTERM);
          }
          if (sw) sw->Signal(SIGTERM);
          stopping = true;
        }
      }
      if (Clock::now() >= next_report && running() > 0) {
        const std::string step = LastStep(ranks[0]->output());
        progress(fmt::format("  [{}] {:.0f} s: rank 0 {}; {} of {} ranks running", run.label,
                             Seconds(Clock::now() - t0), step.empty() ? "starting" : step,
                             running(), n));
        next_report += every;
      }
    }
  }
  for (std::thread& t : waiters) t.join();
  const double wall_s = Seconds(Clock::now() - t0);

  // 4. Stop the switch, keep every log.
  if (sw) {
    if (!stopping) sw->Signal(SIGTERM);
    const auto code = sw->Wait(kSwitchStopTimeout);
    if (code != 0 && !stopping) {
      progress(fmt::format("  warning: serene-switch {} when stopped (see {}/switch.log)",
                           code ? "exited with code " + std::to_string(*code) : "had to be killed",
                           dir));
    }
    (void)WriteTextFile(dir + "/switch.log", sw->output());
  }
  for (int r = 0; r < n; ++r) (void)WriteTextFile(LogPath(dir, r), ranks[r]->output());

  // The first rank to fail is the cause; later failures are usually its
  // consequences.
  int first = -1;
  std::vector<int> killed;
  for (int r = 0; r < n; ++r) {
    if (!exits[r].code) killed.push_back(r);
    if (exits[r].code && *exits[r].code != 0 && (first < 0 || exits[r].when < exits[first].when)) {
      first = r;
    }
  }
  if (first >= 0) {
    return fail(Status::Internal(fmt::format("rank {} {} after {:.1f} s; the last lines of {}:\n{}",
                                             first, ExitText(exits[first]),
                                             Seconds(exits[first].when - t0), LogPath(dir, first),
                                             Tail(ranks[first]->output(), kLogTailLines))));
  }
  if (!killed.empty()) {
    return fail(Status::DeadlineExceeded(fmt::format(
        "timed out: {} of {} ranks were still running after the run's timeout of {} s and were "
        "killed; the last lines of {}:\n{}",
        killed.size(), n, scenario.timeout_s, LogPath(dir, killed[0]),
        Tail(ranks[killed[0]]->output(), kLogTailLines))));
  }

  // 5. Metrics.
  std::vector<train::RunMetrics> metrics;
  for (int r = 0; r < n; ++r) {
    auto m = ReadMetricsFile(MetricsPath(dir, r));
    if (!m.ok()) return fail(m.status());
    metrics.push_back(std::move(*m));
  }
  auto summary = Summarize(run, std::move(metrics));
  if (!summary.ok()) return fail(summary.status());
  summary->dir = dir;
  summary->wall_s = wall_s;
  return *summary;
}

std::vector<RunSummary> ExecuteAll(const Scenario& scenario, const RunnerOptions& options) {
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  std::vector<RunSummary> summaries;
  for (size_t i = 0; i < scenario.runs.size(); ++i) {
    const RunSpec& run = scenario.runs[i];
    progress(fmt::format("=== run {}/{}: {} ({}{}) ===", i + 1, scenario.runs.size(), run.label,
                         BackendName(run.backend),
                         run.backend == BackendKind::kSerene ? ", policy " + run.policy : ""));
    RunSummary r = ExecuteRun(scenario, i, options);
    if (r.status.ok()) {
      progress(fmt::format(
          "  {}: done in {:.1f} s: job completion {:.2f} s, rank 0 stopped ({}) after {} "
          "iterations at accuracy {:.4f}; waiting {:.2f} s summed over {} ranks",
          run.label, r.wall_s, r.jct_s, r.stop_reason, r.iterations_rank0, r.final_accuracy,
          r.wait_total_s, r.workers));
    } else {
      progress(fmt::format("  {} FAILED: {}", run.label, r.status.message()));
    }
    summaries.push_back(std::move(r));
  }
  ComputeRatios(&summaries);
  return summaries;
}

}  // namespace serene::experiment
