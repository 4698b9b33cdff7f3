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

#include "common/temp_key_file.h"
#include "experiment/commands.h"
#include "experiment/metrics_reader.h"
#include "experiment/run_controller.h"
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

// The progress line serene-train logs at step 0, right after the first
// timeline point (LastStep reads the same lines).
constexpr char kFirstStepLine[] = "] step 0 t=";

// Where the ranks' run clock (train/metrics.h) started, on the launcher's
// clock. The metrics carry no wall clock, so it is estimated from two things
// the launcher saw, each a little after the fact:
//   - the last rank's step-0 progress line arrived at `first_step` (nullopt
//     if it was not seen), which it logs right after its first timeline
//     point, at run clock timeline[0].time_s (the line is flushed at once;
//     rank 0, which evaluates first, is not the last rank unless it is the
//     only one);
//   - each rank exited some time after its run clock read job_completion_s
//     (closing the backend, writing its metrics, exiting: ~0.3 s here).
// Every estimate is late by its delay, so the earliest one is the best: on
// this host within a few milliseconds, through the step-0 line.
Clock::time_point RunClockOrigin(const std::vector<RankExit>& exits,
                                 const std::vector<train::RunMetrics>& metrics,
                                 std::optional<Clock::time_point> first_step) {
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  Clock::time_point origin = Clock::time_point::max();
  for (size_t r = 0; r < exits.size() && r < metrics.size(); ++r) {
    origin = std::min(origin, exits[r].when - seconds(metrics[r].job_completion_s));
  }
  const std::vector<train::TimelinePoint>& last = metrics.back().timeline;
  if (first_step && !last.empty() && last[0].step == 0) {
    origin = std::min(origin, *first_step - seconds(last[0].time_s));
  }
  return origin;
}

// "policy ssp:10", "policy script policies/scheduled.lua, sync_clocks=5".
std::string PolicyDescription(const RunSpec& run) {
  if (!IsPolicyScript(run.policy)) return "policy " + run.policy;
  std::string out = "policy script " + run.policy;
  for (const auto& [name, value] : run.params) out += ", " + name + "=" + value;
  return out;
}

}  // namespace

std::string DefaultBinDir() { return loadgen::OwnBinaryDir(); }

std::string RunDirName(size_t index, const RunSpec& run) {
  return fmt::format("{}-{}", index + 1, Slug(run.label));
}

RunSummary ExecuteRun(const Scenario& scenario, size_t index, const RunnerOptions& options) {
  const RunSpec& run = scenario.runs[index];
  const std::string dir = options.out_dir + "/" + RunDirName(index, run);
  // Progress comes from this thread and from a dynamic run's controller.
  std::mutex progress_mu;
  auto progress = [&](const std::string& line) {
    std::lock_guard lock(progress_mu);
    if (options.progress) options.progress(line);
  };

  // A dynamic run's controller, and what it leaves in the run directory.
  // (Declared before the controller: its thread reads them until it stops.)
  std::mutex t0_mu;
  std::optional<Clock::time_point> ranks_started;  // guarded by t0_mu; for progress lines
  int script_errors = 0, refusals = 0;  // the controller's thread's until it stopped
  std::unique_ptr<RunController> controller;
  std::string script_path;
  const auto period = std::chrono::milliseconds(scenario.control_period_ms);
  auto write_control_files = [&](std::optional<Clock::time_point> origin) {
    const std::vector<TimedEvent> events = controller->events();
    (void)WriteTextFile(dir + "/controller.log", ControllerLog(events));
    (void)WriteTextFile(dir + "/policy_changes.json",
                        PolicyChangesJson(run, script_path, kJob, period, events, origin));
    return ToPolicyChanges(events, origin);
  };
  auto stop_controller = [&] {
    if (!controller) return;
    if (Status s = controller->Stop(); !s.ok()) {
      progress(
          fmt::format("  warning: the policy controller ended early: {} (see {}/controller.log)",
                      s.message(), dir));
    }
    if (script_errors > 1 || refusals > 1) {
      progress(fmt::format("  [{}] {} policy script error(s) and {} refused change(s) in all "
                           "(see {}/controller.log)",
                           run.label, script_errors, refusals, dir));
    }
  };
  auto fail = [&](Status why) {
    if (controller) {
      (void)controller->Stop();
      (void)write_control_files(std::nullopt);
    }
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
  const bool dynamic = serene && IsPolicyScript(run.policy);
  for (const std::string& bin : {train_bin, serene ? switch_bin : train_bin}) {
    if (access(bin.c_str(), X_OK) != 0) {
      return fail(Status::NotFound(bin + " not found or not executable; build it (cmake --build " +
                                   "build) or point --bin-dir at the directory that holds it"));
    }
  }
  if (dynamic) {
    auto path = ResolvePolicyScript(run.policy);
    if (!path.ok()) return fail(path.status());
    script_path = *path;
  }

  // 1. The switch.
  RunContext ctx;
  ctx.dir = dir;
  ctx.job = kJob;
  std::unique_ptr<ChildProcess> sw;
  // Ends the switch of a run that cannot go on, keeping its log.
  auto drop_switch = [&] {
    sw->Signal(SIGTERM);
    (void)sw->Wait(kSwitchStopTimeout);
    (void)WriteTextFile(dir + "/switch.log", sw->output());
  };
  std::unique_ptr<TempKeyFile> key_file;  // lives as long as the run's processes
  if (serene) {
    auto made = TempKeyFile::CreateWithFreshKey();  // getrandom(2)
    if (!made.ok()) return fail(made.status());
    key_file = std::move(*made);
    ctx.key_file = key_file->path();
    uint16_t group_port = 0;
    if (scenario.group) {
      Result<uint16_t> port = loadgen::FreeUdpPort();
      if (!port.ok()) return fail(port.status());
      group_port = *port;
    }
    sw = std::make_unique<ChildProcess>(switch_bin,
                                        SwitchArgs(scenario, run, kJob, ctx.key_file, group_port));
    auto listening = loadgen::WaitForListening(*sw, kSwitchStartTimeout);
    if (!listening) {
      (void)WriteTextFile(dir + "/switch.log", sw->output());
      return fail(Status::Unavailable("serene-switch did not start; its output:\n" +
                                      Tail(sw->output(), kLogTailLines)));
    }
    ctx.switch_address = *listening;
    progress(fmt::format("  serene-switch on {}: job {}", ctx.switch_address,
                         SwitchJobSpec(scenario, run, kJob, ctx.key_file, group_port)));
  }

  // 1b. A dynamic run's controller, before the ranks so that a static rule
  // the script returns is in force from their first clock.
  if (dynamic) {
    auto control = loadgen::WaitForControl(*sw, kSwitchStartTimeout);
    if (!control) {
      drop_switch();
      return fail(Status::Unavailable(
          "serene-switch did not report its runtime API address (\"runtime API at ADDR\"), so " +
          script_path + "'s controller cannot start; its output:\n" +
          Tail(sw->output(), kLogTailLines)));
    }
    ctx.control_address = *control;  // the ranks report their evaluations there
    RunController::Options co;
    co.control_address = *control;
    co.script_path = script_path;
    co.params = run.params;
    co.job = kJob;
    co.period = period;
    co.on_event = [&](const TimedEvent& t) {
      using Kind = control::ControllerEvent::Kind;
      const Kind kind = t.event.kind;
      if (kind != Kind::kApplied && kind != Kind::kRefused && kind != Kind::kScriptError) return;
      std::string when;
      {
        std::lock_guard lock(t0_mu);
        when = ranks_started && t.at >= *ranks_started
                   ? fmt::format("{:.1f} s", Seconds(t.at - *ranks_started))
                   : "before start";
      }
      if (kind == Kind::kApplied) {
        progress(fmt::format("  [{}] {}: clock {}: {} (epoch {})", run.label, when,
                             t.event.effective_clock, t.event.rule_text, t.event.epoch));
        return;
      }
      // Not fatal: the switch keeps its rule. A script that fails at every
      // period would flood the progress: the first of each kind is printed,
      // the rest go to controller.log only.
      if (++(kind == Kind::kRefused ? refusals : script_errors) > 1) return;
      progress(fmt::format("  [{}] {}: {}: {} (the switch keeps its rule; any further ones are "
                           "in controller.log)",
                           run.label, when,
                           kind == Kind::kRefused ? "change refused" : "policy script error",
                           t.event.message));
    };
    auto started = RunController::Start(std::move(co));
    if (!started.ok()) {
      drop_switch();
      const std::string& why = started.status().message();
      return fail(
          started.status().code() == Status::Code::kUnavailable
              ? Status::Unavailable("cannot start the controller of " + script_path + ": " + why)
              : Status::InvalidArgument("policy script " + script_path + ": " + why));
    }
    controller = std::move(*started);
    progress(
        fmt::format("  controller: {} on job {} through the runtime API at {}, every {} ms; "
                    "its log in {}/controller.log",
                    script_path, kJob, *control, scenario.control_period_ms, dir));
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
  {
    std::lock_guard lock(t0_mu);
    ranks_started = t0;
  }
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(scenario.timeout_s));
  const Clock::time_point deadline = t0 + timeout;
  progress(fmt::format("  {} serene-train ranks started ({}); logs and metrics in {}", n,
                       BackendName(run.backend), dir));
  // A dynamic run's changes go on the ranks' run clock: note when the last
  // rank's step-0 line arrives (RunClockOrigin). It ends at the latest when
  // that rank's output does, i.e. when it exits.
  std::optional<Clock::time_point> first_step_seen;
  std::thread first_step_watcher;
  if (dynamic) {
    first_step_watcher = std::thread([&, last = ranks.back().get()] {
      const auto guard =
          std::chrono::duration_cast<std::chrono::milliseconds>(timeout + std::chrono::seconds(1));
      if (last->WaitForOutput(kFirstStepLine, guard)) first_step_seen = Clock::now();
    });
  }

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
          // collective) until their deadlines: end them and the switch now
          // (and first the controller, which would see the switch go away).
          progress(fmt::format("  rank {} {}: stopping the other ranks{}", r, ExitText(exits[r]),
                               sw ? " and the switch" : ""));
          for (int o = 0; o < n; ++o) {
            if (!exits[o].exited) ranks[o]->Signal(SIGTERM);
          }
          if (controller) (void)controller->Stop();
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
  if (first_step_watcher.joinable()) first_step_watcher.join();
  const double wall_s = Seconds(Clock::now() - t0);

  // 4. Stop the controller, then the switch; keep every log.
  if (!stopping) stop_controller();
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

  // 5. Metrics, and a dynamic run's changes on the ranks' run clock.
  std::vector<train::RunMetrics> metrics;
  for (int r = 0; r < n; ++r) {
    auto m = ReadMetricsFile(MetricsPath(dir, r));
    if (!m.ok()) return fail(m.status());
    metrics.push_back(std::move(*m));
  }
  const Clock::time_point origin = RunClockOrigin(exits, metrics, first_step_seen);
  auto summary = Summarize(run, std::move(metrics));
  if (!summary.ok()) return fail(summary.status());
  if (controller) summary->policy_changes = write_control_files(origin);
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
    const std::string how =
        run.backend == BackendKind::kSerene
            ? ", " + PolicyDescription(run)
            : fmt::format(", {} allreduce", collective::GlooAlgorithmName(run.gloo_algorithm));
    progress(fmt::format("=== run {}/{}: {} ({}{}) ===", i + 1, scenario.runs.size(), run.label,
                         BackendName(run.backend), how));
    RunSummary r = ExecuteRun(scenario, i, options);
    if (r.status.ok()) {
      progress(fmt::format(
          "  {}: done in {:.1f} s: job completion {:.2f} s, rank 0 stopped ({}) after {} "
          "iterations at accuracy {:.4f}; waiting {:.2f} s summed over {} ranks; per iteration "
          "compute {:.2f} ms, communication {:.2f} ms ({:.1f} % of a step)",
          run.label, r.wall_s, r.jct_s, r.stop_reason, r.iterations_rank0, r.final_accuracy,
          r.wait_total_s, r.workers, 1e3 * r.compute_per_iteration_s, 1e3 * r.comm_per_iteration_s,
          r.comm_share_pct));
    } else {
      progress(fmt::format("  {} FAILED: {}", run.label, r.status.message()));
    }
    summaries.push_back(std::move(r));
  }
  ComputeRatios(&summaries);
  return summaries;
}

}  // namespace serene::experiment
