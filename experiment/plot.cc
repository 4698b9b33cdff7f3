#include "experiment/plot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "loadgen/child_process.h"

namespace serene::experiment {
namespace {

std::string DataFile(size_t index, const RunSummary& r) {
  return fmt::format("plot/{}-{}.dat", index + 1, Slug(r.spec.label));
}

bool HasAccuracy(const RunSummary& r) {
  if (!r.status.ok()) return false;
  for (const train::TimelinePoint& p : r.timeline) {
    if (std::isfinite(p.accuracy)) return true;
  }
  return false;
}

// A gnuplot string literal in single quotes ('' is a quote).
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A dynamic run's policy changes drawn in its line's colour (linetype
// `lt`): a dotted vertical line at each change, labelled with the rule, and a
// key entry that says what the dotted lines are. A change installed before
// training started is drawn at 0.
struct ChangeMarks {
  std::string settings;  // set arrow / set label commands
  std::string key;       // a keyentry plot element, or ""
};
ChangeMarks PolicyChangeMarks(const RunSummary& r, int lt) {
  ChangeMarks marks;
  for (const PolicyChange& c : r.policy_changes) {
    if (!std::isfinite(c.seconds)) continue;
    const double x = std::max(0.0, c.seconds);
    marks.settings += fmt::format(
        "set arrow from {0}, graph 0 to {0}, graph 1 nohead linetype {1} linewidth 1.5 dashtype 3\n"
        "set label {2} at {0}, graph 0.03 rotate by 90 left offset character 1.2, 0 "
        "textcolor lt {1} font ',9'\n",
        x, lt, Quote(c.rule + " from clock " + std::to_string(c.effective_clock)));
  }
  if (!marks.settings.empty()) {
    marks.key = fmt::format("keyentry with lines linetype {} linewidth 1.5 dashtype 3 title {}", lt,
                            Quote(r.spec.label + ": policy changes"));
  }
  return marks;
}

}  // namespace

std::optional<std::string> FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    start = colon + 1;
  }
  return std::nullopt;
}

std::string GnuplotScript(const Scenario& scenario, const std::vector<RunSummary>& summaries,
                          const std::string& png) {
  std::string plots, marks, keys;
  int lt = 0;  // each curve's linetype, so that its marks share its colour
  for (size_t i = 0; i < summaries.size(); ++i) {
    if (!HasAccuracy(summaries[i])) continue;
    ++lt;
    plots += fmt::format("{}{} using 1:2 with linespoints linetype {} pointsize 0.5 title {}",
                         plots.empty() ? "" : ", \\\n     ", Quote(DataFile(i, summaries[i])), lt,
                         Quote(summaries[i].spec.label));
    const ChangeMarks m = PolicyChangeMarks(summaries[i], lt);
    marks += m.settings;
    if (!m.key.empty()) keys += ", \\\n     " + m.key;
  }
  plots += keys;
  if (scenario.target_accuracy > 0) {
    plots += fmt::format(", \\\n     {} with lines dashtype 2 linecolor rgb 'gray' title 'target'",
                         scenario.target_accuracy);
  }
  return fmt::format(
      "# Accuracy vs time of each run (the evaluating rank's timeline). Regenerate with\n"
      "#   cd <experiment dir> && gnuplot plot/accuracy.gp\n"
      "set terminal pngcairo size 960,600 noenhanced\n"
      "set output {}\n"
      "set title {}\n"
      "set xlabel 'time since the start of training (s)'\n"
      "set ylabel 'test accuracy'\n"
      "set key bottom right\n"
      "set grid\n"
      "{}\n"
      "{}"
      "plot {}\n",
      Quote(png),
      Quote(fmt::format("{}: {} ranks, {}, straggler {}", scenario.name, scenario.workers,
                        train::ModelKindName(scenario.model), scenario.straggler)),
      // Zoom on the approach to the target, where the runs differ.
      scenario.target_accuracy > 0
          ? fmt::format("set yrange [{}:{}]", std::max(0.0, scenario.target_accuracy - 0.2),
                        std::min(1.0, scenario.target_accuracy + 0.06))
          : std::string("set yrange [*:*]"),
      marks, plots);
}

Status RunGnuplot(const std::string& dir, const std::string& script) {
  auto gnuplot = FindOnPath("gnuplot");
  if (!gnuplot) return Status::NotFound("gnuplot is not on PATH (Debian: gnuplot-nox)");
  // gnuplot resolves the script's relative paths against its working
  // directory, which ChildProcess inherits: run it through `cd` in a shell.
  loadgen::ChildProcess child("/bin/sh",
                              {"-c", "cd \"$0\" && exec \"$1\" \"$2\"", dir, *gnuplot, script});
  if (!child.started()) return Status::Internal("cannot start /bin/sh to run gnuplot");
  const auto code = child.Wait(std::chrono::seconds(60));
  if (code != 0) {
    return Status::Internal(fmt::format("gnuplot {}/{} failed ({}):\n{}", dir, script,
                                        code ? "exit " + std::to_string(*code) : "timed out",
                                        child.output()));
  }
  return Status::Ok();
}

Result<std::string> PlotAccuracy(const std::string& dir, const Scenario& scenario,
                                 const std::vector<RunSummary>& summaries) {
  auto gnuplot = FindOnPath("gnuplot");
  if (!gnuplot) return Status::NotFound("gnuplot is not on PATH (Debian: gnuplot-nox)");
  bool any = false;
  for (size_t i = 0; i < summaries.size(); ++i) {
    if (!HasAccuracy(summaries[i])) continue;
    any = true;
    std::string data = "# time_s accuracy step\n";
    for (const train::TimelinePoint& p : summaries[i].timeline) {
      if (std::isfinite(p.accuracy))
        data += fmt::format("{} {} {}\n", p.time_s, p.accuracy, p.step);
    }
    if (auto s = WriteTextFile(dir + "/" + DataFile(i, summaries[i]), data); !s.ok()) return s;
  }
  if (!any) return Status::FailedPrecondition("no run has an accuracy timeline to plot");
  const std::string script = dir + "/plot/accuracy.gp";
  if (auto s = WriteTextFile(script, GnuplotScript(scenario, summaries, "accuracy.png")); !s.ok()) {
    return s;
  }
  if (auto s = RunGnuplot(dir, "plot/accuracy.gp"); !s.ok()) return s;
  return dir + "/accuracy.png";
}

}  // namespace serene::experiment
