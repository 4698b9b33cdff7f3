#include "experiment/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "train/model_layout.h"

namespace serene::experiment {
namespace {

using json = nlohmann::ordered_json;

json Num(double v) { return std::isfinite(v) ? json(v) : json(); }

// "-" for NaN, else `v` with `digits` decimals.
std::string Cell(double v, int digits) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "-";
}

std::string CsvCell(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

std::string CsvText(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

// A gloo run's "policy": its allreduce, by algorithm unless the default.
std::string PolicyText(const RunSummary& r) {
  if (r.spec.backend == BackendKind::kSerene) return r.spec.policy;
  if (r.spec.gloo_algorithm == collective::GlooAlgorithm::kDefault) return "allreduce";
  return std::string(collective::GlooAlgorithmName(r.spec.gloo_algorithm)) + " allreduce";
}

// The policy in a table cell: a script by its file name.
std::string PolicyCell(const RunSummary& r) {
  if (!IsDynamic(r)) return PolicyText(r);
  return std::filesystem::path(r.spec.policy).filename().string();
}

// The lines under the table that list each dynamic run's changes.
std::vector<std::string> PolicyChangeLines(const std::vector<RunSummary>& runs) {
  std::vector<std::string> lines;
  for (const RunSummary& r : runs) {
    if (IsDynamic(r) && r.status.ok()) lines.push_back(r.spec.label + ": " + PolicyChangesText(r));
  }
  return lines;
}

constexpr char kChangesHeading[] =
    "Policy changes (when on the run clock, the clock the rule applies from, the rule):";

// The report's rows: a name and one cell per run.
struct Row {
  std::string name;
  std::vector<std::string> cells;
};

std::vector<Row> TableRows(const std::vector<RunSummary>& runs) {
  const std::string base = runs.empty() ? "" : runs[0].spec.label;
  std::vector<Row> rows = {{"backend", {}},
                           {"policy", {}},
                           {"policy changes", {}},
                           {"job completion time (s)", {}},
                           {"  % of " + base, {}},
                           {"target reached at (s)", {}},
                           {"waiting time, sum over ranks (s)", {}},
                           {"waiting time, mean per rank (s)", {}},
                           {"  % of " + base, {}},
                           {"barrier wait, sum over ranks (s)", {}},
                           {"compute, mean per rank (s)", {}},
                           {"compute per iteration (ms)", {}},
                           {"communication per iteration (ms)", {}},
                           {"  % of a step", {}},
                           {"straggler sleep, sum (s)", {}},
                           {"iterations, rank 0 / mean", {}},
                           {"final accuracy", {}},
                           {"stop reason", {}}};
  for (const RunSummary& r : runs) {
    const bool ok = r.status.ok();
    const std::vector<std::string> cells = {
        std::string(BackendName(r.spec.backend)),
        PolicyCell(r),
        ok && IsDynamic(r) ? std::to_string(r.policy_changes.size()) : "-",
        ok ? Cell(r.jct_s, 2) : "FAILED",
        Cell(r.jct_pct_of_baseline, 1),
        Cell(r.target_reached_s, 2),
        Cell(r.wait_total_s, 2),
        Cell(r.wait_mean_s, 2),
        Cell(r.wait_pct_of_baseline, 1),
        Cell(r.barrier_wait_total_s, 2),
        Cell(r.compute_mean_s, 2),
        Cell(1e3 * r.compute_per_iteration_s, 2),
        Cell(1e3 * r.comm_per_iteration_s, 2),
        Cell(r.comm_share_pct, 1),
        Cell(r.straggler_sleep_total_s, 2),
        ok ? fmt::format("{} / {:.1f}", r.iterations_rank0, r.iterations_mean) : "-",
        Cell(r.final_accuracy, 4),
        ok ? r.stop_reason : "-"};
    for (size_t i = 0; i < rows.size(); ++i) rows[i].cells.push_back(cells[i]);
  }
  return rows;
}

json RankJson(const train::RunMetrics& m) {
  return {{"rank", m.rank},
          {"straggler", m.straggler},
          {"stop_reason", std::string(train::StopReasonName(m.stop_reason))},
          {"iterations", m.iterations},
          {"job_completion_s", Num(m.job_completion_s)},
          {"target_reached_s", Num(m.target_reached_s)},
          {"init_s", Num(m.init_s)},
          {"compute_s", Num(m.compute_s)},
          {"pull_s", Num(m.pull_s)},
          {"push_s", Num(m.push_s)},
          {"wait_s", Num(m.wait_s)},
          {"barrier_wait_s", Num(m.barrier_wait_s)},
          {"straggler_sleep_s", Num(m.straggler_sleep_s)},
          {"slowed_iterations", m.slowed_iterations},
          {"eval_s", Num(m.eval_s)},
          {"final_accuracy", Num(m.final_accuracy)}};
}

}  // namespace

bool IsDynamic(const RunSummary& r) {
  return r.spec.backend == BackendKind::kSerene && IsPolicyScript(r.spec.policy);
}

std::string PolicyChangesText(const RunSummary& r) {
  if (r.policy_changes.empty()) return "none (sync throughout)";
  std::string out;
  for (const PolicyChange& c : r.policy_changes) {
    const std::string when = !std::isfinite(c.seconds) ? "? s"
                             : c.seconds < 0           ? "before training,"
                                                       : fmt::format("{:.1f} s", c.seconds);
    out +=
        fmt::format("{}{} clock {} → {}", out.empty() ? "" : "; ", when, c.effective_clock, c.rule);
  }
  return out;
}

Result<RunSummary> Summarize(const RunSpec& spec, std::vector<train::RunMetrics> ranks) {
  if (ranks.empty()) return Status::InvalidArgument(spec.label + ": no rank metrics");
  const int n = static_cast<int>(ranks.size());
  for (int i = 0; i < n; ++i) {
    if (ranks[i].rank != i || ranks[i].world_size != n) {
      return Status::InvalidArgument(
          fmt::format("{}: metrics #{} are of rank {} of {}, expected rank {} of {}", spec.label, i,
                      ranks[i].rank, ranks[i].world_size, i, n));
    }
  }
  RunSummary r;
  r.spec = spec;
  r.workers = n;
  r.jct_s = 0;
  r.wait_total_s = r.barrier_wait_total_s = r.straggler_sleep_total_s = 0;
  double compute = 0, iterations = 0, wait = 0;
  for (const train::RunMetrics& m : ranks) {
    r.jct_s = std::max(r.jct_s, m.job_completion_s);
    r.wait_total_s += m.wait_s;
    r.barrier_wait_total_s += m.barrier_wait_s;
    r.straggler_sleep_total_s += m.straggler_sleep_s;
    r.slowed_iterations += m.slowed_iterations;
    compute += m.compute_s;
    wait += m.wait_s;
    iterations += static_cast<double>(m.iterations);
    if (r.evaluating_rank < 0 && m.evaluates) r.evaluating_rank = m.rank;
  }
  r.wait_mean_s = r.wait_total_s / n;
  r.compute_mean_s = compute / n;
  r.iterations_mean = iterations / n;
  if (iterations > 0) {
    r.compute_per_iteration_s = compute / iterations;
    r.comm_per_iteration_s = wait / iterations;
  }
  if (const double step = compute + r.straggler_sleep_total_s + wait; step > 0) {
    r.comm_share_pct = 100.0 * wait / step;
  }
  r.iterations_rank0 = ranks[0].iterations;
  const train::RunMetrics& eval = ranks[std::max(r.evaluating_rank, 0)];
  r.final_accuracy = eval.final_accuracy;
  r.target_reached_s = eval.target_reached_s;
  r.stop_reason = std::string(train::StopReasonName(eval.stop_reason));
  r.timeline = eval.timeline;
  r.ranks = std::move(ranks);
  return r;
}

RunSummary FailedRun(const RunSpec& spec, Status why) {
  RunSummary r;
  r.spec = spec;
  r.status = std::move(why);
  return r;
}

void ComputeRatios(std::vector<RunSummary>* summaries) {
  if (summaries->empty()) return;
  const RunSummary& base = (*summaries)[0];
  for (RunSummary& r : *summaries) {
    r.jct_pct_of_baseline = train::kNaN;
    r.wait_pct_of_baseline = train::kNaN;
    if (!base.status.ok() || !r.status.ok()) continue;
    if (base.jct_s > 0) r.jct_pct_of_baseline = 100.0 * r.jct_s / base.jct_s;
    if (base.wait_total_s > 0) r.wait_pct_of_baseline = 100.0 * r.wait_total_s / base.wait_total_s;
  }
}

std::string FormatTable(const std::vector<RunSummary>& summaries) {
  const std::vector<Row> rows = TableRows(summaries);
  size_t name_width = 0;
  std::vector<size_t> widths(summaries.size());
  for (size_t c = 0; c < summaries.size(); ++c) widths[c] = summaries[c].spec.label.size();
  for (const Row& row : rows) {
    name_width = std::max(name_width, row.name.size());
    for (size_t c = 0; c < row.cells.size(); ++c) {
      widths[c] = std::max(widths[c], row.cells[c].size());
    }
  }
  std::string out = fmt::format("{:<{}}", "", name_width);
  for (size_t c = 0; c < summaries.size(); ++c) {
    out += fmt::format("  {:>{}}", summaries[c].spec.label, widths[c]);
  }
  out += "\n";
  for (const Row& row : rows) {
    out += fmt::format("{:<{}}", row.name, name_width);
    for (size_t c = 0; c < row.cells.size(); ++c) {
      out += fmt::format("  {:>{}}", row.cells[c], widths[c]);
    }
    out += "\n";
  }
  if (const auto lines = PolicyChangeLines(summaries); !lines.empty()) {
    out += std::string("\n") + kChangesHeading + "\n";
    for (const std::string& line : lines) out += "  " + line + "\n";
  }
  for (const RunSummary& r : summaries) {
    if (!r.status.ok()) out += "\n" + r.spec.label + " FAILED: " + r.status.message() + "\n";
  }
  return out;
}

std::string ReportJson(const Scenario& s, const std::vector<RunSummary>& summaries) {
  json scenario = {{"name", s.name},
                   {"workers", s.workers},
                   {"model", std::string(train::ModelKindName(s.model))},
                   {"parameters", train::ParameterCount(s.model)},
                   {"steps", s.steps},
                   {"target_accuracy", s.target_accuracy},
                   {"eval_every", s.eval_every},
                   {"eval_samples", s.eval_samples},
                   {"seed", s.seed},
                   {"lr", s.learning_rate},
                   {"momentum", s.momentum},
                   {"compute_floor_ms", s.compute_floor_ms},
                   {"batch", s.batch},
                   {"straggler", s.straggler},
                   {"straggler_ranks", s.straggler_ranks},
                   {"row", s.row},
                   {"threads", s.threads},
                   {"timeout", s.timeout_s},
                   {"control_period_ms", s.control_period_ms}};
  json runs = json::array();
  for (const RunSummary& r : summaries) {
    json ranks = json::array();
    for (const train::RunMetrics& m : r.ranks) ranks.push_back(RankJson(m));
    json timeline = json::array();
    for (const train::TimelinePoint& p : r.timeline) {
      timeline.push_back({{"step", p.step},
                          {"time_s", p.time_s},
                          {"train_loss", Num(p.train_loss)},
                          {"accuracy", Num(p.accuracy)},
                          {"test_loss", Num(p.test_loss)}});
    }
    json changes = json::array();
    for (const PolicyChange& c : r.policy_changes) {
      changes.push_back({{"seconds", Num(c.seconds)},
                         {"unix_ms", c.unix_ms},
                         {"high", c.high},
                         {"effective_clock", c.effective_clock},
                         {"rule", c.rule},
                         {"epoch", c.epoch}});
    }
    json params = json::object();
    for (const auto& [name, value] : r.spec.params) params[name] = value;
    runs.push_back({{"label", r.spec.label},
                    {"backend", std::string(BackendName(r.spec.backend))},
                    {"policy", PolicyText(r)},
                    {"gloo_algorithm",
                     r.spec.backend == BackendKind::kGloo
                         ? json(std::string(collective::GlooAlgorithmName(r.spec.gloo_algorithm)))
                         : json()},
                    {"dynamic", IsDynamic(r)},
                    {"params", std::move(params)},
                    {"ok", r.status.ok()},
                    {"error", r.status.ok() ? json() : json(r.status.message())},
                    {"dir", r.dir},
                    {"wall_s", Num(r.wall_s)},
                    {"workers", r.workers},
                    {"job_completion_s", Num(r.jct_s)},
                    {"jct_pct_of_baseline", Num(r.jct_pct_of_baseline)},
                    {"target_reached_s", Num(r.target_reached_s)},
                    {"wait_total_s", Num(r.wait_total_s)},
                    {"wait_mean_s", Num(r.wait_mean_s)},
                    {"wait_pct_of_baseline", Num(r.wait_pct_of_baseline)},
                    {"barrier_wait_total_s", Num(r.barrier_wait_total_s)},
                    {"compute_mean_s", Num(r.compute_mean_s)},
                    {"compute_per_iteration_s", Num(r.compute_per_iteration_s)},
                    {"comm_per_iteration_s", Num(r.comm_per_iteration_s)},
                    {"comm_share_pct", Num(r.comm_share_pct)},
                    {"straggler_sleep_total_s", Num(r.straggler_sleep_total_s)},
                    {"slowed_iterations", r.slowed_iterations},
                    {"iterations_rank0", r.iterations_rank0},
                    {"iterations_mean", Num(r.iterations_mean)},
                    {"evaluating_rank", r.evaluating_rank},
                    {"final_accuracy", Num(r.final_accuracy)},
                    {"stop_reason", r.stop_reason},
                    {"ranks", std::move(ranks)},
                    {"timeline", std::move(timeline)},
                    {"policy_changes", std::move(changes)}});
  }
  const std::string baseline = summaries.empty() ? "" : summaries[0].spec.label;
  return json(
             {{"scenario", std::move(scenario)}, {"baseline", baseline}, {"runs", std::move(runs)}})
             .dump(2) +
         "\n";
}

std::string ReportCsv(const std::vector<RunSummary>& summaries) {
  std::string out =
      "label,backend,policy,ok,job_completion_s,jct_pct_of_baseline,target_reached_s,"
      "wait_total_s,wait_mean_s,wait_pct_of_baseline,barrier_wait_total_s,compute_mean_s,"
      "compute_per_iteration_s,comm_per_iteration_s,comm_share_pct,straggler_sleep_total_s,"
      "slowed_iterations,iterations_rank0,iterations_mean,"
      "final_accuracy,stop_reason,policy_changes,wall_s,error\n";
  for (const RunSummary& r : summaries) {
    const bool ok = r.status.ok();
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
        CsvText(r.spec.label), BackendName(r.spec.backend), CsvText(PolicyText(r)),
        ok ? "true" : "false", CsvCell(r.jct_s), CsvCell(r.jct_pct_of_baseline),
        CsvCell(r.target_reached_s), CsvCell(r.wait_total_s), CsvCell(r.wait_mean_s),
        CsvCell(r.wait_pct_of_baseline), CsvCell(r.barrier_wait_total_s), CsvCell(r.compute_mean_s),
        CsvCell(r.compute_per_iteration_s), CsvCell(r.comm_per_iteration_s),
        CsvCell(r.comm_share_pct), CsvCell(r.straggler_sleep_total_s),
        ok ? std::to_string(r.slowed_iterations) : "", ok ? std::to_string(r.iterations_rank0) : "",
        CsvCell(r.iterations_mean), CsvCell(r.final_accuracy), r.stop_reason,
        ok && IsDynamic(r) ? std::to_string(r.policy_changes.size()) : "", CsvCell(r.wall_s),
        ok ? "" : CsvText(r.status.message()));
  }
  return out;
}

std::string ReportMarkdown(const Scenario& s, const std::vector<RunSummary>& summaries) {
  std::string out = fmt::format(
      "# serene-experiment: {}\n\n{} ranks, {} ({} parameters), step budget {}, target accuracy "
      "{} (0 = none), evaluation every {} steps on {} test examples, seed {}, lr {}{}, batch {} per "
      "rank, straggler `{}` on ranks `{}`, switch row width {}, {} thread(s) per rank.",
      s.name, s.workers, train::ModelKindName(s.model), train::ParameterCount(s.model), s.steps,
      s.target_accuracy, s.eval_every, s.eval_samples == 0 ? int64_t{10000} : s.eval_samples,
      s.seed, s.learning_rate,
      s.momentum > 0 ? fmt::format(" with momentum {}", s.momentum) : std::string(), s.batch,
      s.straggler, s.straggler_ranks, s.row, s.threads);
  if (s.compute_floor_ms > 0) {
    out += fmt::format(" Each step's computation lasts at least {} ms (the rest slept).",
                       s.compute_floor_ms);
  }
  if (std::any_of(summaries.begin(), summaries.end(), IsDynamic)) {
    out += fmt::format(" Policy scripts' controllers read the job's telemetry every {} ms.",
                       s.control_period_ms);
  }
  out += "\n\n";
  out += "| |";
  for (const RunSummary& r : summaries) out += " " + r.spec.label + " |";
  out += "\n|---|";
  for (size_t i = 0; i < summaries.size(); ++i) out += "---:|";
  out += "\n";
  for (const Row& row : TableRows(summaries)) {
    std::string name = row.name;
    if (name.rfind("  ", 0) == 0) name = "&nbsp;&nbsp;" + name.substr(2);
    out += "| " + name + " |";
    for (const std::string& cell : row.cells) out += " " + cell + " |";
    out += "\n";
  }
  if (const auto lines = PolicyChangeLines(summaries); !lines.empty()) {
    out += std::string("\n") + kChangesHeading + "\n\n";
    for (const std::string& line : lines) out += "- " + line + "\n";
  }
  for (const RunSummary& r : summaries) {
    if (!r.status.ok()) {
      out += "\n**" + r.spec.label + " failed:**\n\n```\n" + r.status.message() + "\n```\n";
    }
  }
  return out;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) return Status::IoError("cannot open " + path + " for writing");
  out << text;
  out.close();
  if (!out) return Status::IoError("cannot write " + path);
  return Status::Ok();
}

Status WriteReport(const std::string& dir, const Scenario& scenario,
                   const std::vector<RunSummary>& summaries) {
  Status s = WriteTextFile(dir + "/results.json", ReportJson(scenario, summaries));
  if (s.ok()) s = WriteTextFile(dir + "/results.csv", ReportCsv(summaries));
  if (s.ok()) s = WriteTextFile(dir + "/results.md", ReportMarkdown(scenario, summaries));
  return s;
}

}  // namespace serene::experiment
